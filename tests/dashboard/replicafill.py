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


EDGES = (0.1, 0.5, 1.0)


def _bucket(ttft: float | None, edges: Sequence[float], *, slow: bool, beyond: bool) -> float:
    """The upper edge of the bucket every observation falls in (inf: past the last edge)."""
    if ttft is not None:
        return ttft
    if beyond:
        return float("inf")
    return edges[-1] if slow else edges[0]


def replica_scrapes(
    *,
    slow: bool = False,
    beyond: bool = False,
    waiting: Sequence[float] = (1,),
    kv: Sequence[float] = (0.3,),
    start: float = 0.0,
    model: str = "llama",
    reason: str = "stop",
    edges: Sequence[float] = EDGES,
    ttft: float | None = None,
    history: float = 0.0,
    ttft_before: float | None = None,
) -> list:
    """Scrapes every 15 s for 5 minutes from `start` (seconds after T0): 1 request/s and
    50 tokens/s per engine, every TTFT under 0.1 s (or, when `slow`, between 0.5 and 1 s;
    when `beyond`, above the last finite edge, 1 s).

    `edges`: the TTFT bucket edges; `ttft`: the edge every TTFT falls just under (in the
    bucket it closes). `history`: seconds of scrapes before `start` too, the TTFTs then
    under `ttft_before` (the same as now when not given), counters running on."""
    now = _bucket(ttft, edges, slow=slow, beyond=beyond)
    before = now if ttft_before is None else ttft_before
    scrapes = []
    per_bucket = dict.fromkeys((*edges, float("inf")), 0.0)
    for t in range(-int(history), END + 1, 15):
        if t > -int(history):
            per_bucket[before if t <= 0 else now] += 15.0
        n = float(t + int(history))
        samples: list = []
        for engine, (queued, used) in enumerate(zip(waiting, kv, strict=True)):
            labels = {"model_name": model, "engine": str(engine)}
            samples += [
                ("vllm:request_success_total", {**labels, "finished_reason": reason}, n),
                ("vllm:generation_tokens_total", labels, 50.0 * n),
                ("vllm:num_requests_waiting", labels, float(queued)),
                ("vllm:kv_cache_usage_perc", labels, float(used)),
            ]
            buckets = {
                f"{edge}": sum(c for e, c in per_bucket.items() if e <= edge) for edge in edges
            }
            buckets["+Inf"] = n
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
