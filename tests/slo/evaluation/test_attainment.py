"""Attainment from bucket counts: exact on a shared edge, an interval between edges."""

from __future__ import annotations

import math

import pytest

from slo.evaluation.attainment import (
    latency_attainment,
    latency_reason,
    success_attainment,
)
from slo.evaluation.figures import Interval, verdict_of

INF = math.inf
# Cumulative: 60 events <= 0.1 s, 90 <= 0.25 s, 98 <= 0.5 s, 100 in all.
COUNTS = {0.1: 60.0, 0.25: 90.0, 0.5: 98.0, INF: 100.0}


def test_a_threshold_on_an_edge_gives_the_exact_fraction() -> None:
    attainment, below, above = latency_attainment(COUNTS, 0.25)
    assert attainment == Interval.exact(0.9)
    assert (below, above) == (0.25, 0.25)


def test_a_threshold_between_edges_gives_the_fractions_at_its_neighbours() -> None:
    attainment, below, above = latency_attainment(COUNTS, 0.3)
    assert attainment == Interval(0.9, 0.98)
    assert (below, above) == (0.25, 0.5)


def test_a_threshold_under_the_first_edge_starts_the_interval_at_zero() -> None:
    assert latency_attainment(COUNTS, 0.05)[0] == Interval(0.0, 0.6)


def test_a_threshold_past_the_last_finite_edge_ends_the_interval_at_one() -> None:
    attainment, _, above = latency_attainment(COUNTS, 2.0)
    assert attainment == Interval(0.98, 1.0)
    assert above == INF


def test_no_events_is_no_data_not_zero_or_one_hundred_percent() -> None:
    assert latency_attainment({0.1: 0.0, INF: 0.0}, 0.1)[0] is None
    assert latency_attainment(None, 0.1)[0] is None
    assert success_attainment({}, ("abort",)) is None


def test_success_counts_only_the_named_finish_reasons_as_bad() -> None:
    counts = {"stop": 90.0, "length": 5.0, "abort": 4.0, "error": 1.0}
    assert success_attainment(counts, ("abort", "error")) == Interval.exact(0.95)
    assert success_attainment(counts, ("error",)) == Interval.exact(0.99)


@pytest.mark.parametrize(
    ("attainment", "verdict"),
    [
        (Interval(0.991, 0.995), "met"),
        (Interval(0.95, 0.98), "breached"),
        (Interval(0.98, 0.995), "undecided"),
        (None, "no-data"),
    ],
)
def test_the_verdict_is_decided_from_the_whole_interval(
    attainment: Interval | None, verdict: str
) -> None:
    assert verdict_of(attainment, 0.99) == verdict


def test_the_reason_counts_the_replicas_whose_grid_lacks_the_threshold() -> None:
    edges = {"a:1": (0.2, 0.3), "b:1": (0.2, 0.25, 0.3), "c:1": (0.2, 0.3), "d:1": (0.2, 0.3)}
    text = latency_reason(0.25, 0.2, 0.3, edges)
    assert text.startswith("threshold 250 ms lies between buckets 200 ms and 300 ms on 3 of 4")
    assert "it is an edge on 1" in text
    assert (
        latency_reason(0.2, 0.2, 0.2, edges) == "exact: 200 ms is a bucket edge on all 4 replicas"
    )
