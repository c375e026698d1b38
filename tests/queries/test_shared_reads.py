"""One `run_queries` on the local backend reads and decodes the store once for every spec,
and every result is the one the spec would get alone (stale markers included)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import Fleet, ScrapeRun, ScrapeStatus
from queries import (
    FractionBelow,
    Gauge,
    Increase,
    Mean,
    Quantile,
    Rate,
    Ratio,
    Scope,
    Spec,
    Window,
    run_queries,
    run_query,
)
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = pytest.mark.django_db

TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
TYPES = {
    "vllm:generation_tokens": "counter",
    "vllm:request_success": "counter",
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    TTFT: "histogram",
    ITL: "histogram",
}
W = 30.0


def _scrape(i: int, model: str, speed: float) -> list:
    labels = {"model_name": model, "engine": "0"}
    # A broken sample at 100 s: older than any rate here reaches, but not than gauges do.
    tokens = float("nan") if i == 10 and speed == 2.0 else 40.0 * i * speed
    return [
        ("vllm:num_requests_running", labels, float(i % 7) * speed),
        ("vllm:num_requests_waiting", labels, float(i % 3)),
        ("vllm:kv_cache_usage_perc", labels, 0.01 * (i % 50)),
        ("vllm:generation_tokens_total", labels, tokens),
        ("vllm:request_success_total", {**labels, "finished_reason": "stop"}, 3.0 * i),
        ("vllm:request_success_total", {**labels, "finished_reason": "abort"}, 1.0 * i),
        *histogram(
            TTFT,
            labels,
            {"0.1": 2 * i, "0.5": 6 * i * speed, "1.0": 9 * i * speed, "+Inf": 10 * i * speed},
            total=4.0 * i,
        ),  # fmt: skip
        *histogram(ITL, labels, {"0.01": 30 * i, "0.05": 90 * i, "+Inf": 100 * i}, total=3.0 * i),
    ]


def busy_fleet() -> Fleet:
    """Two models on three replicas, 10 s scrapes for 10 minutes; `c:1` stops answering
    (failed scrapes, then nothing) four minutes before the end; `a:1` failed one scrape
    long before the window, within reach of gauges only."""
    fleet = fleet_named()
    for instance, model, speed, last, failed in (
        ("a:1", "llama", 1.0, 60, (105,)),
        ("b:1", "llama", 2.0, 60, ()),
        ("c:1", "qwen", 1.5, 36, (370, 380, 390)),
    ):
        scrapes = [(10 * i, _scrape(i, model, speed)) for i in range(last + 1)]
        endpoint = endpoint_with_scrapes(fleet, instance, scrapes, types=TYPES)
        for seconds in failed:
            ScrapeRun.objects.create(
                endpoint=endpoint, started_at=at(seconds), duration_seconds=1,
                status=ScrapeStatus.FAILED,
            )  # fmt: skip
    return fleet


def overview_sized_specs() -> dict[str, Spec]:
    """About as many specs of every kind as the overview runs, with different reaches."""
    specs: dict[str, Spec] = {}
    for key in ("ttft", "itl"):
        for q in (0.5, 0.9, 0.99):
            specs[f"{key} p{q}"] = Quantile(key, q, window_seconds=W)
            specs[f"{key} p{q} by instance"] = Quantile(key, q, by=("instance",), window_seconds=60)
        specs[f"{key} mean"] = Mean(key, window_seconds=W)
        specs[f"{key} mean by model"] = Mean(key, by=("model_name",), window_seconds=120)
        specs[f"{key} heatmap"] = Rate(key, by=("le",), window_seconds=W)
        specs[f"{key} rate"] = Rate(key, window_seconds=W)
    specs["ttft under 0.5s"] = FractionBelow("ttft", 0.5, window_seconds=W)
    specs["ttft under 0.3s"] = FractionBelow("ttft", 0.3, by=("instance",), window_seconds=W)
    for agg in ("sum", "avg", "max", "min"):
        specs[f"running {agg}"] = Gauge("running", agg=agg)
        specs[f"kv {agg} by instance"] = Gauge("kv_usage", agg=agg, by=("instance",))
    specs["waiting"] = Gauge("waiting", by=("model_name",))
    specs["tokens"] = Rate("generation_tokens", window_seconds=W)
    specs["tokens by instance"] = Rate("generation_tokens", by=("instance",), window_seconds=90)
    specs["tokens increase"] = Increase("generation_tokens", window_seconds=W)
    specs["finished"] = Rate("request_success", by=("finished_reason",), window_seconds=W)
    specs["aborted"] = Rate("request_success", match={"finished_reason": "abort"})
    specs["abort share"] = Ratio(
        Rate("request_success", match={"finished_reason": "abort"}, window_seconds=W),
        Rate("request_success", window_seconds=W),
    )
    return specs


def sample_frame_queries(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if "inventory_sampleframe" in q["sql"]]


# The last 6 minutes: c:1 answers, then fails, then is gone; gauges look back 5 minutes
# and rates 30 s to 2 minutes, so the shared read reaches further back than most specs.
WINDOW = Window(at(240), at(600), 15)


def test_an_overview_sized_set_of_specs_reads_the_sample_frames_once(settings: Any) -> None:
    # The plain read, one query for the span; with the frame cache on, a cold read lists
    # the span and then fetches the values (tests/inventory/store/ holds those reads).
    settings.FLEETSCOPE_FRAME_CACHE_MB = 0
    scope = Scope(busy_fleet())
    specs = overview_sized_specs()
    assert len(specs) >= 35
    with CaptureQueriesContext(connection) as captured:
        results = run_queries(specs, scope=scope, window=WINDOW, backend="local")
    assert len(sample_frame_queries(captured)) == 1
    assert sum("inventory_scraperun" in q["sql"] for q in captured.captured_queries) == 1
    # Layouts: one query for the series sets' digests, at most one for the blobs of those
    # this process has not decoded yet (a digest names one layout, so it is never stale).
    assert sum("inventory_seriesset" in q["sql"] for q in captured.captured_queries) <= 2
    assert all(r.status in ("ok", "partial") for r in results.values()), {
        n: r.message for n, r in results.items() if not r.has_data
    }
    with CaptureQueriesContext(connection) as again:
        assert run_queries(specs, scope=scope, window=WINDOW, backend="local") == results
    assert sum("inventory_seriesset" in q["sql"] for q in again.captured_queries) == 1


def test_every_shared_result_equals_the_result_of_its_spec_run_alone() -> None:
    scope = Scope(busy_fleet())
    specs = overview_sized_specs()
    together = run_queries(specs, scope=scope, window=WINDOW, backend="local")
    for name, spec in specs.items():
        with CaptureQueriesContext(connection) as captured:
            alone = run_query(spec, scope=scope, window=WINDOW, backend="local")
        # Alone, a spec still reads its frames in one query (a mean or a fraction too).
        assert len(sample_frame_queries(captured)) == 1, name
        assert together[name].to_dict() == alone.to_dict(), name


def test_a_replica_that_stopped_answering_leaves_the_same_gap_in_a_shared_read() -> None:
    scope = Scope(busy_fleet(), model_name="qwen")
    specs: dict[str, Spec] = {
        "running": Gauge("running", by=("instance",)),
        "ttft": Quantile("ttft", 0.5),
    }
    together = run_queries(specs | overview_sized_specs(), scope=scope, window=WINDOW,
                           backend="local")  # fmt: skip
    running = together["running"]
    assert running.status == "partial"
    assert "c:1: 3 failed scrape(s) in the window, shown as gaps" in running.warnings
    values = running.series[0].values
    stamps = running.series[0].timestamps
    # c:1's last sample is at 360 s; its failed scrape at 370 s is a stale marker.
    assert [v for t, v in zip(stamps, values, strict=True) if t <= at(360).timestamp()]
    assert all(v is None for t, v in zip(stamps, values, strict=True) if t > at(360).timestamp())
    for name, spec in specs.items():
        alone = run_query(spec, scope=scope, window=WINDOW, backend="local")
        assert together[name].to_dict() == alone.to_dict(), name
