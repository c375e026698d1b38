"""Fleets in the middle of an upgrade: every replica is read under the name it really
exposes, buckets are summed only at edges every replica has, and a quantile is never
more precise than its bucket (local backend; the Prometheus side is in
test_mixed_fleets_prometheus)."""

from __future__ import annotations

import math

import pytest

from inventory.models import Fleet
from queries import FractionBelow, Gauge, Quantile, Rate, Scope, Window, run_query
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}
WINDOW = Window(at(60), at(120), 30)
COUNTER = {"vllm:prefix_cache_queries": "counter", "vllm:gpu_prefix_cache_queries": "counter"}
TTFT = "vllm:time_to_first_token_seconds"


def _gauges(fleet: Fleet, instance: str, name: str, value: float) -> None:
    scrapes = [(s, [(name, M, value)]) for s in (0, 30, 60, 90, 120)]
    endpoint_with_scrapes(fleet, instance, scrapes, types={name: "gauge"})


def test_a_gauge_renamed_between_versions_is_read_on_every_replica() -> None:
    fleet = fleet_named()
    _gauges(fleet, "new:1", "vllm:kv_cache_usage_perc", 0.3)
    _gauges(fleet, "old:1", "vllm:gpu_cache_usage_perc", 0.998)
    result = run_query(
        Gauge("kv_usage", agg="max", by=("instance",)), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    assert result.status == "ok"
    assert {s.labels["instance"]: s.values[-1] for s in result.series} == {
        "new:1": 0.3,
        "old:1": 0.998,
    }
    assert any("read under 2 names" in w for w in result.warnings), result.warnings


def test_a_counter_exposed_under_its_old_and_new_name_is_counted_once() -> None:
    fleet = fleet_named()
    # vLLM 0.9-0.10 wrote both names for the same counter: reading both would double it.
    scrapes = [
        (s, [("vllm:prefix_cache_queries_total", M, 10.0 * s),
             ("vllm:gpu_prefix_cache_queries_total", M, 10.0 * s)])
        for s in (0, 30, 60, 90, 120)
    ]  # fmt: skip
    endpoint_with_scrapes(fleet, "both:1", scrapes, types=COUNTER)
    result = run_query(
        Rate("prefix_queries", window_seconds=60), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    assert [v for v in result.series[0].values] == [10.0, 10.0, 10.0]


def test_a_replica_exposing_none_of_the_names_makes_the_result_partial_and_is_named() -> None:
    fleet = fleet_named()
    _gauges(fleet, "new:1", "vllm:kv_cache_usage_perc", 0.3)
    _gauges(fleet, "bare:1", "vllm:num_requests_running", 2.0)
    result = run_query(
        Gauge("kv_usage", agg="max", by=("instance",)), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    assert result.status == "partial"
    note = next(w for w in result.warnings if "1 of 2 endpoints" in w)
    assert "bare:1 exposes no kv_usage metric" in note


def _ttft(fleet: Fleet, instance: str, cumulative_per_second: dict[str, float]) -> None:
    """A TTFT histogram whose buckets grow by `cumulative_per_second` each second."""
    scrapes = [
        (s, histogram(TTFT, M, {le: rate * s for le, rate in cumulative_per_second.items()}))
        for s in (0, 30, 60, 90, 120)
    ]
    endpoint_with_scrapes(fleet, instance, scrapes, types={TTFT: "histogram"})


def test_a_fleet_quantile_sums_buckets_only_at_edges_every_replica_has() -> None:
    fleet = fleet_named()
    # Old vLLM: buckets up to 10 s; current: also 20 and 40 s. Observations are 15 s on the
    # current replica, 5 s on the old one.
    _ttft(fleet, "new:1", {"1": 0, "10": 0, "20": 1, "40": 1, "+Inf": 1})
    _ttft(fleet, "old:1", {"1": 0, "10": 1, "+Inf": 1})
    result = run_query(
        Quantile("ttft", 0.9, window_seconds=60), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    [series] = result.series
    # Summed at 20 and 40 as if the old replica had them, p90 would read ~38 s. On the
    # shared edges, half the requests are above 10 s: the quantile is past the last
    # shared finite edge, a lower bound only.
    assert series.values[-1] is None
    assert (series.lower or ())[-1] == 10.0 and (series.upper or ())[-1] is None
    assert any("le=20, 40 not on every replica" in w for w in result.warnings), result.warnings


def test_a_quantile_past_the_last_finite_edge_is_a_lower_bound_not_the_edge() -> None:
    fleet = fleet_named()
    _ttft(fleet, "old:1", {"1": 0, "10": 0, "+Inf": 1})  # everything took over 10 s
    result = run_query(
        Quantile("ttft", 0.99, window_seconds=60), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    [series] = result.series
    assert series.values == (None, None, None)
    assert series.lower == (10.0, 10.0, 10.0)
    assert series.upper == (None, None, None)
    assert series.to_dict()["lower"] == [10.0, 10.0, 10.0]


def test_every_quantile_carries_the_bucket_it_fell_in() -> None:
    fleet = fleet_named()
    _ttft(fleet, "a:1", {"0.5": 0, "1": 1, "2": 2, "+Inf": 2})
    result = run_query(
        Quantile("ttft", 0.5, window_seconds=60), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    [series] = result.series
    assert series.values == (1.0, 1.0, 1.0)
    assert series.lower == (0.5, 0.5, 0.5) and series.upper == (1.0, 1.0, 1.0)


def test_per_replica_quantiles_use_each_replicas_own_edges() -> None:
    fleet = fleet_named()
    _ttft(fleet, "new:1", {"1": 0, "10": 0, "20": 1, "40": 1, "+Inf": 1})
    _ttft(fleet, "old:1", {"1": 0, "10": 1, "+Inf": 1})
    result = run_query(
        Quantile("ttft", 0.5, by=("instance",), window_seconds=60), scope=Scope(fleet),
        window=WINDOW, backend="local",
    )  # fmt: skip
    by_instance = {s.labels["instance"]: s for s in result.series}
    assert by_instance["new:1"].values[-1] == pytest.approx(15.0)
    assert (by_instance["new:1"].lower or ())[-1] == 10.0
    assert by_instance["old:1"].values[-1] == pytest.approx(5.5)


def test_le_spellings_are_one_edge_across_replicas() -> None:
    fleet = fleet_named()
    _ttft(fleet, "a:1", {"2": 1, "+Inf": 2})
    _ttft(fleet, "b:1", {"2.0": 1, "+Inf": 2})
    result = run_query(
        FractionBelow("ttft", 2.0, window_seconds=60), scope=Scope(fleet), window=WINDOW,
        backend="local",
    )  # fmt: skip
    assert result.series[0].values[-1] == pytest.approx(0.5)
    assert not math.isnan(result.series[0].values[-1] or math.nan)
