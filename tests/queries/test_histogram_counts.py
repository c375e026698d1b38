"""A histogram whose `_count` is not its `+Inf` bucket is broken: the local backend refuses
its percentiles, fractions and means, and names the series and both numbers."""

from __future__ import annotations

import pytest

from inventory.models import Fleet
from queries import FractionBelow, Mean, Quantile, Rate, Scope, Spec, Window, run_query
from tests.queries.storefill import Sample, at, endpoint_with_scrapes, fleet_named

pytestmark = pytest.mark.django_db

TTFT = "vllm:time_to_first_token_seconds"
TYPES = {TTFT: "histogram"}
M = {"model_name": "llama"}
WINDOW = Window(at(30), at(30), 10)
SPECS: dict[str, Spec] = {
    "percentile": Quantile("ttft", 0.9, window_seconds=30),
    "fraction": FractionBelow("ttft", 0.5, window_seconds=30),
    "mean": Mean("ttft", window_seconds=30),
}


def ttft(buckets: dict[str, float], count: float, total: float) -> list[Sample]:
    """One scrape of the histogram with `_count` given separately from the buckets."""
    return [
        *((f"{TTFT}_bucket", {**M, "le": le}, value) for le, value in buckets.items()),
        (f"{TTFT}_count", dict(M), count),
        (f"{TTFT}_sum", dict(M), total),
    ]


def fleet_whose_count_drifts(count_at_20s: float) -> Fleet:
    """Six scrapes 10 s apart; at 20 s the exporter's `_count` is `count_at_20s` while
    its `+Inf` bucket says 118."""
    fleet = fleet_named()
    scrapes = []
    for i, inf in enumerate((0.0, 60.0, 118.0, 180.0, 240.0, 300.0)):
        count = count_at_20s if i == 2 else inf
        buckets = {"0.5": inf / 2, "1.0": inf * 0.9, "+Inf": inf}
        scrapes.append((10 * i, ttft(buckets, count, total=inf * 0.4)))
    endpoint_with_scrapes(fleet, "a:1", scrapes, types=TYPES)
    return fleet


@pytest.mark.parametrize("kind", SPECS)
def test_a_count_that_is_not_the_inf_bucket_makes_the_result_unavailable_naming_the_series(
    kind: str,
) -> None:
    fleet = fleet_whose_count_drifts(120.0)
    result = run_query(SPECS[kind], scope=Scope(fleet), window=WINDOW, backend="local")
    assert (result.status, result.reason) == ("unavailable", "bad-histogram")
    assert result.message == (
        "percentile unavailable: vllm:time_to_first_token_seconds{instance=a:1, "
        "model_name=llama} has _count 120 but +Inf bucket 118"
    )
    assert result.series == ()


def test_a_count_that_differs_from_the_inf_bucket_only_by_float_noise_is_accepted() -> None:
    fleet = fleet_whose_count_drifts(118.0 * (1 + 1e-13))
    for kind, spec in SPECS.items():
        result = run_query(spec, scope=Scope(fleet), window=WINDOW, backend="local")
        assert result.status == "ok", (kind, result.message)


def test_a_drift_older_than_the_range_does_not_condemn_later_points() -> None:
    fleet = fleet_whose_count_drifts(120.0)
    # At 50 s a 20 s range starts at 30 s, after the bad scrape.
    result = run_query(Quantile("ttft", 0.5, window_seconds=20), scope=Scope(fleet),
                       window=Window(at(50), at(50), 10), backend="local")  # fmt: skip
    assert result.status == "ok", result.message


def test_the_rate_of_observations_needs_no_buckets_and_is_not_checked() -> None:
    fleet = fleet_whose_count_drifts(120.0)
    result = run_query(Rate("ttft", window_seconds=30), scope=Scope(fleet), window=WINDOW,
                       backend="local")  # fmt: skip
    assert result.status == "ok"
