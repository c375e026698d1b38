"""All series of an answer onto the grid in one pass: each lands where a plain reading puts it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from inventory.prometheus import PrometheusBadAnswer
from queries.promql.grid import matrix_on_grid

GRID = np.array([1000, 2000, 3000, 4000], dtype=np.int64)


def by_points(values: list) -> list[float]:
    """[[t, "v"], ...] read one pair at a time in plain Python."""
    points = {round(float(stamp) * 1000): float(text) for stamp, text in values}
    return [points.get(int(t), np.nan) for t in GRID]


def test_every_row_lands_where_one_row_at_a_time_puts_it() -> None:
    rows: list[dict[str, Any]] = [
        {"metric": {"le": "1"}, "values": [[1, "1"], [2, "NaN"], [4, "+Inf"]]},
        {"metric": {"le": "2"}, "values": []},
        {"metric": {"le": "+Inf"}, "values": [[3, "7.5"], [9, "1"], [2.0004, "3"]]},
    ]
    matrix = matrix_on_grid(rows, GRID)
    for i, row in enumerate(rows):
        assert np.array_equal(matrix[i], by_points(row["values"]), equal_nan=True)


def test_an_answer_without_points_is_all_gaps() -> None:
    assert np.isnan(matrix_on_grid([{"values": []}, {}], GRID)).all()


@pytest.mark.parametrize(
    "values", [[[1, "x"]], [[1]], [["a", "1"]], [[1, "1", 2]], [{"t": 1, "v": "1"}], [[None, "1"]]]
)
def test_a_malformed_pair_makes_the_whole_answer_bad(values: list) -> None:
    with pytest.raises(PrometheusBadAnswer, match="value pair"):
        matrix_on_grid([{"values": [[1, "1"]]}, {"values": values}], GRID)
