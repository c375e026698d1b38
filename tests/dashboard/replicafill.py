"""Hand-made vLLM replicas in the embedded store, for the replica table and overview tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inventory.models import Endpoint, Fleet, ScrapeRun, ScrapeStatus
from tests.queries.storefill import at, endpoint_with_scrapes, histogram

TTFT = "vllm:time_to_first_token_seconds"
TYPES = {
    "vllm:request_success": "counter",
    "vllm:generation_tokens": "counter",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    TTFT: "histogram",
}
END = 300


def replica_scrapes(
    *,
    slow: bool = False,
    beyond: bool = False,
    waiting: Sequence[float] = (1,),
    kv: Sequence[float] = (0.3,),
    start: float = 0.0,
    model: str = "llama",
    reason: str = "stop",
) -> list:
    """Scrapes every 15 s for 5 minutes from `start` (seconds after T0): 1 request/s and
    50 tokens/s per engine, every TTFT under 0.1 s (or, when `slow`, between 0.5 and 1 s;
    when `beyond`, above the last finite edge, 1 s)."""
    scrapes = []
    for t in range(0, END + 1, 15):
        samples: list = []
        for engine, (queued, used) in enumerate(zip(waiting, kv, strict=True)):
            labels = {"model_name": model, "engine": str(engine)}
            n = float(t)
            samples += [
                ("vllm:request_success_total", {**labels, "finished_reason": reason}, n),
                ("vllm:generation_tokens_total", labels, 50.0 * n),
                ("vllm:num_requests_waiting", labels, float(queued)),
                ("vllm:kv_cache_usage_perc", labels, float(used)),
            ]
            fast = 0.0 if slow or beyond else n
            buckets = {"0.1": fast, "0.5": fast, "1.0": 0.0 if beyond else n, "+Inf": n}
            samples += histogram(TTFT, labels, buckets, total=0.05 * n)
        scrapes.append((start + t, samples))
    return scrapes


def replica(
    fleet: Fleet, instance: str, *, up: bool = True, start: float = 0.0, **shape: Any
) -> Endpoint:
    scrapes = replica_scrapes(start=start, **shape)
    endpoint = endpoint_with_scrapes(fleet, instance, scrapes, types=TYPES)
    ScrapeRun.objects.create(
        endpoint=endpoint, started_at=at(start + END - 15), duration_seconds=0.01,
        status=ScrapeStatus.SUCCEEDED,
    )  # fmt: skip
    if not up:
        ScrapeRun.objects.create(
            endpoint=endpoint, started_at=at(start + END), duration_seconds=5.0,
            status=ScrapeStatus.FAILED, error_kind="refused", error="connection refused",
        )  # fmt: skip
    return endpoint
