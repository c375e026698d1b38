"""Query results: gaps for non-finite values, whichever way a series is built."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dashboard.queries import ResultSeries

GRID = (1.0, 2.0, 3.0, 4.0, 5.0)


def test_a_series_from_an_array_equals_one_built_value_by_value() -> None:
    values = np.array([1.5, math.nan, math.inf, -math.inf, -2.0])
    fast = ResultSeries.from_array({"instance": "a:1"}, GRID, values)
    slow = ResultSeries({"instance": "a:1"}, GRID, tuple(values.tolist()))
    assert fast == slow
    assert fast.values == (1.5, None, None, None, -2.0)
    assert all(type(v) is float for v in fast.present)  # plain floats, JSON-ready


def test_a_series_from_an_array_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        ResultSeries.from_array({}, GRID, np.array([1.0, 2.0]))
