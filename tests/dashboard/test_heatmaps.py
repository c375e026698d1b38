"""Bucket rates computed on whole arrays agree, float for float, with the rule they implement
read one step and one replica at a time."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.heatmaps import bucket_rates
from queries import ResultSeries

Column = list[float | None]

# Few distinct values, so that equal, rising, falling and noise-close neighbours all occur:
# 0.1 + 0.2 sits just above 0.3, and -0.0 checks that not even a zero's sign changes.
VALUES = st.sampled_from(
    [0.0, -0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0, 2.5, 7.0, None, math.nan, math.inf, -math.inf]
)
# "1" and "1.0" are one edge spelled twice; a replica may lack some edges.
EDGE_SPELLINGS = ("0.5", "1", "1.0", "10", "+Inf")


def step_by_step(series: Sequence[ResultSeries]) -> tuple[list[float], list[Column], int]:
    """Edges, per-bucket rows and blanked steps, by the rule: per step, sum the replicas
    that have every common edge, difference edge by edge, blank a step that counts down."""
    histograms: dict[tuple[tuple[str, str], ...], dict[float, Column]] = {}
    for one in series:
        edge = float(one.labels["le"])
        key = tuple(sorted((k, v) for k, v in one.labels.items() if k != "le"))
        column = list(one.values)
        earlier = histograms.setdefault(key, {}).get(edge)
        if earlier is not None:
            column = [
                b if a is None else a if b is None else a + b
                for a, b in zip(earlier, column, strict=True)
            ]
        histograms[key][edge] = column
    if not histograms:
        return [], [], 0
    edges = sorted(set.intersection(*(set(buckets) for buckets in histograms.values())))
    steps = len(series[0].values)
    rows: list[Column] = [[None] * steps for _ in edges]
    blanked = 0
    for step in range(steps):
        total: list[float] | None = None
        for buckets in histograms.values():
            at_step = [buckets[edge][step] for edge in edges]
            if any(v is None for v in at_step):
                continue
            present = [float(v) for v in at_step if v is not None]
            total = (
                present if total is None else [a + b for a, b in zip(total, present, strict=True)]
            )
        if total is None or not edges:
            continue
        counts, below, trusted = [], 0.0, True
        for value in total:
            count = value - below
            if count < 0:
                if -count > 1e-9 * max(abs(value), abs(below)) + 1e-12:
                    trusted = False
                    break
                count = 0.0
            counts.append(count)
            below = max(below, value)
        if not trusted:
            blanked += 1
            continue
        for row, count in zip(rows, counts, strict=True):
            row[step] = count
    return edges, rows, blanked


@st.composite
def replicas(draw: st.DrawFn) -> list[ResultSeries]:
    steps = draw(st.integers(1, 6))
    stamps = tuple(1_700_000_000.0 + 15 * i for i in range(steps))
    series = []
    for instance in range(draw(st.integers(1, 3))):
        spellings = draw(st.lists(st.sampled_from(EDGE_SPELLINGS), min_size=1, unique=True))
        for le in spellings:
            values = draw(st.lists(VALUES, min_size=steps, max_size=steps))
            labels = {"instance": f"r{instance}:8000", "le": le}
            if draw(st.booleans()):
                series.append(ResultSeries(labels, stamps, tuple(values)))
            else:
                array = np.array([math.nan if v is None else v for v in values])
                series.append(ResultSeries.from_array(labels, stamps, array))
    return series


@settings(max_examples=400, deadline=None)
@given(replicas())
def test_bucket_rates_equal_the_step_by_step_rule_down_to_the_last_bit(
    series: list[ResultSeries],
) -> None:
    edges, rows, blanked = step_by_step(series)
    rates = bucket_rates(series)
    assert list(rates.edges) == edges
    # repr tells 0.0 from -0.0 and shows every digit: equal floats, not close ones.
    assert repr([list(row) for row in rates.rows]) == repr(rows)
    assert all(type(v) is float for row in rates.rows for v in row if v is not None)
    assert rates.blanked_steps == blanked
    decreasing = [note for note in rates.notes if note.startswith("buckets decrease")]
    assert sum(int(note.split(" in ")[1].split(" ")[0]) for note in decreasing) == blanked


def test_a_replica_missing_at_a_step_leaves_the_others_summed_there() -> None:
    stamps = (0.0, 15.0)
    up = [
        ResultSeries({"instance": "a", "le": "1"}, stamps, (1.0, 1.0)),
        ResultSeries({"instance": "a", "le": "+Inf"}, stamps, (3.0, 3.0)),
    ]
    half_missing = [
        ResultSeries({"instance": "b", "le": "1"}, stamps, (2.0, 2.0)),
        ResultSeries({"instance": "b", "le": "+Inf"}, stamps, (math.nan, 4.0)),
    ]
    rates = bucket_rates(up + half_missing)
    assert rates.rows == ([1.0, 3.0], [2.0, 4.0])
    assert rates.blanked_steps == 0


def test_replicas_with_no_edge_in_common_give_no_rows_but_say_so() -> None:
    stamps = (0.0,)
    rates = bucket_rates(
        [
            ResultSeries({"instance": "a", "le": "1"}, stamps, (1.0,)),
            ResultSeries({"instance": "b", "le": "10"}, stamps, (1.0,)),
        ]
    )
    assert (rates.edges, rates.rows) == ((), ())
    assert rates.notes == ("le=1, 10 not on all replicas: merged up",)
