"""The local backend over hand-made scrapes in the embedded store: exact numbers."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

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
    Window,
    run_query,
)
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}
TTFT = "vllm:time_to_first_token_seconds"
TYPES = {
    "vllm:generation_tokens": "counter",
    "vllm:request_success": "counter",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:gpu_cache_usage_perc": "gauge",
    "vllm:num_requests_running": "gauge",
    TTFT: "histogram",
}


def window(start: float, end: float, step: float = 10) -> Window:
    return Window(at(start), at(end), step)


def counter_scrapes(values: list[float], labels: dict[str, str] = M) -> list:
    return [(10 * i, [("vllm:generation_tokens_total", labels, v)]) for i, v in enumerate(values)]


def test_increase_across_a_replica_restart_counts_the_new_tokens_not_a_negative(
) -> None:  # fmt: skip
    fleet = fleet_named()
    endpoint_with_scrapes(fleet, "a:1", counter_scrapes([990, 1000, 5, 15]), types=TYPES)
    result = run_query(
        Increase("generation_tokens", window_seconds=30),
        scope=Scope(fleet),
        window=window(30, 30),
        backend="local",
    )
    assert result.status == "ok"
    assert result.resolved_name == "vllm:generation_tokens_total"
    assert result.series[0].values == (25.0,)


def test_rate_is_evaluated_at_every_step_and_absent_before_two_samples_exist() -> None:
    fleet = fleet_named()
    endpoint_with_scrapes(fleet, "a:1", counter_scrapes([100, 110, 120, 130, 140]), types=TYPES)
    result = run_query(
        Rate("generation_tokens", window_seconds=20), scope=Scope(fleet), window=window(0, 40),
        backend="local",
    )  # fmt: skip
    assert result.series[0].timestamps == tuple(at(s).timestamp() for s in (0, 10, 20, 30, 40))
    assert result.series[0].values == (None, 1.0, 1.0, 1.0, 1.0)


def data_parallel_fleet() -> Fleet:
    fleet = fleet_named()
    for instance, base in (("a:1", 100.0), ("b:1", 1000.0)):
        scrapes = [
            (10 * i, [("vllm:num_requests_running", {**M, "engine": e}, base + int(e))
                      for e in ("0", "1")])
            for i in range(3)
        ]  # fmt: skip
        endpoint_with_scrapes(fleet, instance, scrapes, types=TYPES)
    return fleet


def test_data_parallel_engines_add_up_across_replicas() -> None:
    fleet = data_parallel_fleet()
    total = run_query(
        Gauge("running", by=("model_name",)), scope=Scope(fleet), window=window(20, 20),
        backend="local",
    )  # fmt: skip
    assert [(s.labels, s.values) for s in total.series] == [({"model_name": "llama"}, (2202.0,))]
    per_engine = run_query(
        Gauge("running", by=("engine",)), scope=Scope(fleet), window=window(20, 20),
        backend="local",
    )  # fmt: skip
    assert {s.labels["engine"]: s.values[0] for s in per_engine.series} == {"0": 1100, "1": 1102}
    one_replica = run_query(
        Gauge("running", agg="max"), scope=Scope(fleet, instances=("a:1",)),
        window=window(20, 20), backend="local",
    )  # fmt: skip
    assert one_replica.series[0].values == (101.0,)


def test_a_replica_that_stopped_answering_is_a_gap_never_a_zero() -> None:
    fleet = fleet_named()
    down = endpoint_with_scrapes(
        fleet, "a:1", [(0, [("vllm:num_requests_running", M, 4)])], types=TYPES
    )
    ScrapeRun.objects.create(
        endpoint=down, started_at=at(10), duration_seconds=1, status=ScrapeStatus.FAILED
    )
    endpoint_with_scrapes(
        fleet, "b:1", [(s, [("vllm:num_requests_running", M, 3)]) for s in (0, 10, 20)],
        types=TYPES,
    )  # fmt: skip
    spec = Gauge("running", by=("instance",))
    result = run_query(spec, scope=Scope(fleet), window=window(0, 20), backend="local")
    by_instance = {s.labels["instance"]: s.values for s in result.series}
    assert by_instance == {"a:1": (4.0, None, None), "b:1": (3.0, 3.0, 3.0)}
    assert result.status == "partial"
    assert any("a:1: 1 failed scrape" in w for w in result.warnings)
    only_down = run_query(
        Gauge("running"), scope=Scope(fleet, instances=("a:1",)), window=window(10, 20),
        backend="local",
    )  # fmt: skip
    assert (only_down.status, only_down.reason) == ("unavailable", "no-data")


def test_nan_and_infinite_values_become_gaps_and_the_json_stays_valid() -> None:
    fleet = fleet_named()
    values = [0.5, float("nan"), float("inf"), 0.25]
    scrapes = [(10 * i, [("vllm:kv_cache_usage_perc", M, v)]) for i, v in enumerate(values)]
    endpoint_with_scrapes(fleet, "a:1", scrapes, types=TYPES)
    result = run_query(Gauge("kv_usage", agg="avg"), scope=Scope(fleet), window=window(0, 30),
                       backend="local")  # fmt: skip
    assert result.series[0].values == (0.5, None, None, 0.25)
    text = result.to_json()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["series"][0]["values"] == [0.5, None, None, 0.25]


def test_a_renamed_metric_is_read_under_its_old_name_and_the_result_says_so() -> None:
    fleet = fleet_named()
    endpoint_with_scrapes(fleet, "a:1", [(0, [("vllm:gpu_cache_usage_perc", M, 0.7)])], types=TYPES)
    result = run_query(Gauge("kv_usage", agg="max"), scope=Scope(fleet), window=window(0, 0),
                       backend="local")  # fmt: skip
    assert result.status == "ok"
    assert result.resolved_name == "vllm:gpu_cache_usage_perc"
    assert "exposes vllm:gpu_cache_usage_perc" in result.message
    assert result.series[0].values == (0.7,)


def test_keys_the_fleet_lacks_are_unavailable_with_the_catalog_reason() -> None:
    fleet = fleet_named()
    endpoint_with_scrapes(fleet, "a:1", counter_scrapes([1, 2]), types=TYPES)
    gated = run_query(Rate("spec_decode_drafts"), scope=Scope(fleet), window=window(0, 10),
                      backend="local")  # fmt: skip
    assert (gated.status, gated.reason) == ("unavailable", "flag-gated")
    assert "flag-gated" in gated.message and gated.series == ()
    missing = run_query(Quantile("ttft", 0.5), scope=Scope(fleet), window=window(0, 10),
                        backend="local")  # fmt: skip
    assert (missing.status, missing.reason) == ("unavailable", "not-exposed")


def ttft_fleet(buckets: Mapping[str, float], *, scrapes: int = 4) -> Fleet:
    """Every scrape adds `buckets` (cumulative counts) once more: a steady distribution."""
    fleet = fleet_named()
    endpoint_with_scrapes(
        fleet, "a:1",
        [(10 * i, histogram(TTFT, M, {le: c * i for le, c in buckets.items()}, total=30.0 * i))
         for i in range(scrapes)],
        types=TYPES,
    )  # fmt: skip
    return fleet


UNIFORM = {"0.25": 25, "0.5": 50, "0.75": 75, "1.0": 100, "+Inf": 100}


def test_quantile_interpolates_a_known_distribution_like_prometheus() -> None:
    fleet = ttft_fleet(UNIFORM)
    result = run_query(Quantile("ttft", 0.9, window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    assert result.series[0].values[0] == pytest.approx(0.9)


def test_a_histogram_without_inf_bucket_has_no_percentile_and_says_why() -> None:
    fleet = ttft_fleet({"0.25": 25, "0.5": 50, "1.0": 100})
    result = run_query(Quantile("ttft", 0.9, window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    assert (result.status, result.reason) == ("unavailable", "bad-histogram")
    assert "no +Inf bucket" in result.message


def test_decreasing_buckets_make_the_percentile_unavailable() -> None:
    fleet = ttft_fleet({"0.25": 25, "0.5": 20, "1.0": 100, "+Inf": 100})
    result = run_query(Quantile("ttft", 0.9, window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    assert result.reason == "bad-histogram"
    assert "decreasing buckets at le=0.5" in result.message


def test_fraction_below_an_edge_matches_either_spelling_of_le() -> None:
    fleet = ttft_fleet({"0.25": 25, "0.5": 50, "1": 100, "+Inf": 100})
    result = run_query(FractionBelow("ttft", 0.5, window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    assert result.series[0].values[0] == pytest.approx(0.5)
    at_one = run_query(FractionBelow("ttft", 1.0, window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    assert at_one.series[0].values[0] == pytest.approx(1.0)


def test_fraction_below_a_value_between_edges_returns_both_bounds_and_warns() -> None:
    fleet = ttft_fleet(UNIFORM)
    result = run_query(FractionBelow("ttft", 0.3, window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    bounds = {s.labels["bound"]: s.values[0] for s in result.series}
    assert bounds == {"lower": pytest.approx(0.25), "upper": pytest.approx(0.5)}
    assert any("le=0.3 is not a bucket edge" in w for w in result.warnings)


def test_mean_is_the_rate_of_sum_over_the_rate_of_count() -> None:
    fleet = ttft_fleet(UNIFORM)
    result = run_query(Mean("ttft", window_seconds=30), scope=Scope(fleet),
                       window=window(30, 30), backend="local")  # fmt: skip
    assert result.series[0].values[0] == pytest.approx(0.3)


def test_a_ratio_divides_series_with_the_same_labels() -> None:
    fleet = fleet_named()
    scrapes = [
        (10 * i, [("vllm:request_success_total", {**M, "finished_reason": "stop"}, 30.0 * i),
                  ("vllm:request_success_total", {**M, "finished_reason": "abort"}, 10.0 * i)])
        for i in range(4)
    ]  # fmt: skip
    endpoint_with_scrapes(fleet, "a:1", scrapes, types=TYPES)
    aborted = Ratio(
        Rate("request_success", by=("model_name",), window_seconds=30,
             match={"finished_reason": "abort"}),
        Rate("request_success", by=("model_name",), window_seconds=30),
    )  # fmt: skip
    result = run_query(aborted, scope=Scope(fleet), window=window(30, 30), backend="local")
    ((labels, values),) = [(s.labels, s.values) for s in result.series]
    assert labels == {"model_name": "llama"}
    assert values == pytest.approx((0.25,))


def test_a_hostile_label_value_only_ever_matches_itself() -> None:
    fleet = data_parallel_fleet()
    result = run_query(
        Gauge("running"), scope=Scope(fleet, model_name='"} or up{x="'), window=window(20, 20),
        backend="local",
    )  # fmt: skip
    assert (result.status, result.reason) == ("unavailable", "no-data")
