"""Turning one series of a Prometheus range answer into values on the query's step grid."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inventory.prometheus import PrometheusBadAnswer
from queries.promql.grid import matrix_on_grid

GRID_MS = np.array([1_000_000, 1_015_000, 1_030_000, 1_045_000], dtype=np.int64)


def on_grid(values: object, grid_ms: np.ndarray) -> np.ndarray:
    return matrix_on_grid([{"values": values}], grid_ms)[0]


def by_points(values: list) -> list[float]:
    """The plain-Python reading of [[t, "v"], ...] that the numpy conversion must agree with."""
    points = {round(float(stamp) * 1000): float(text) for stamp, text in values}
    return [points.get(int(t), math.nan) for t in GRID_MS]


def same(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> bool:
    return bool(
        np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)
    )


def test_points_land_on_their_steps_with_gaps_where_prometheus_sent_none() -> None:
    values = [[1000.0, "1.5"], [1030, "NaN"], [1045.0, "+Inf"]]
    grid = on_grid(values, GRID_MS)
    assert same(grid, [1.5, math.nan, math.nan, math.inf])
    assert same(grid, by_points(values))


def test_points_off_the_grid_or_past_its_end_are_left_out() -> None:
    values = [[999.5, "7"], [1015.0, "2"], [1015.6, "3"], [1060.0, "9"]]
    assert same(on_grid(values, GRID_MS), by_points(values))
    assert same(on_grid(values, GRID_MS), [math.nan, 2.0, math.nan, math.nan])


@pytest.mark.parametrize(
    "bad",
    [[1015.0, "not a number"], [1015.0, "1", "2"], [1015.0], "1015", {"t": 1}, [[1015.0], "1"]],
)
def test_a_malformed_pair_makes_the_whole_answer_bad(bad: object) -> None:
    # Prometheus never sends one: whatever did cannot be trusted for the other pairs either.
    values = [[1000.0, "1"], bad, [1045.0, "4"]]
    with pytest.raises(PrometheusBadAnswer, match="value pair is not"):
        on_grid(values, GRID_MS)


def test_no_points_is_all_gaps() -> None:
    assert np.isnan(on_grid([], GRID_MS)).all()
