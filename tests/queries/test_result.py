"""Query results: gaps for non-finite values, whichever way a series is built."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from queries import ResultSeries

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


def test_the_float_view_has_nan_for_every_gap_whichever_way_the_series_was_built() -> None:
    values = np.array([1.5, math.nan, math.inf, -math.inf, -2.0])
    fast = ResultSeries.from_array({}, GRID, values)
    slow = ResultSeries({}, GRID, tuple(values.tolist()))
    for series in (fast, slow):
        assert series.floats.dtype == np.float64
        assert series.floats.tolist()[::4] == [1.5, -2.0]
        assert np.isnan(series.floats[1:4]).all()


def test_the_float_view_is_read_only_and_does_not_follow_the_callers_array() -> None:
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    series = ResultSeries.from_array({}, GRID, values)
    values[0] = 99.0  # a backend reusing its buffer must not change a series it returned
    assert series.values[0] == 1.0 and series.floats[0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        series.floats[0] = 7.0


def test_the_float_view_changes_neither_equality_nor_what_a_pickle_holds() -> None:
    values = np.array([1.0, math.nan, 3.0, 4.0, 5.0])
    viewed = ResultSeries.from_array({"instance": "a:1"}, GRID, values)
    unviewed = ResultSeries({"instance": "a:1"}, GRID, (1.0, None, 3.0, 4.0, 5.0))
    assert viewed == unviewed
    copy = pickle.loads(pickle.dumps(viewed))
    assert "_floats" not in copy.__dict__
    assert copy == viewed
    assert np.array_equal(copy.floats, viewed.floats, equal_nan=True)
