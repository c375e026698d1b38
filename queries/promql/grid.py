"""Many series of a range answer onto the window's step grid at once.

A quantile's answer is its bucket rates: edges x groups series (about two thousand for
the replica table's per-replica quantiles of a 32-replica fleet), and p50, p90 and p99 of
one histogram share it. Converted one series at a time this was a fifth of an
overview's render; here every pair of every series goes through one numpy pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from inventory.prometheus import PrometheusBadAnswer


def matrix_on_grid(rows: Sequence[Mapping[str, Any]], grid_ms: np.ndarray) -> np.ndarray:
    """(rows, steps) float64: each row's `values` ([[t, "v"], ...]) at the steps of
    `grid_ms` (milliseconds), NaN where a row has no point. Values parse as Prometheus
    writes them ("NaN", "+Inf" too); a pair that is not [time, number] raises
    PrometheusBadAnswer, since the whole answer is then suspect."""
    out = np.full((len(rows), len(grid_ms)), np.nan)
    values_of = [row.get("values") or () for row in rows]
    counts = list(map(len, values_of))
    total = sum(counts)
    if not total:
        return out
    # Plain iterators into numpy: an object array of the pairs cost a third more.
    pairs = list(chain.from_iterable(values_of))
    try:
        if set(map(len, pairs)) != {2}:
            raise ValueError("not pairs")
        seconds = np.fromiter(map(itemgetter(0), pairs), np.float64, total)
        values = np.fromiter(map(float, map(itemgetter(1), pairs)), np.float64, total)
        if not np.isfinite(seconds).all():
            raise ValueError("a time is not a number")
        stamps = np.rint(seconds * 1000).astype(np.int64)
    except (TypeError, ValueError, OverflowError, KeyError, IndexError):
        raise PrometheusBadAnswer('a value pair is not [time, "number"]') from None
    row_of = np.repeat(np.arange(len(rows)), counts)
    where = np.searchsorted(grid_ms, stamps)
    inside = where < len(grid_ms)
    hits = inside.copy()
    hits[inside] = grid_ms[where[inside]] == stamps[inside]
    out[row_of[hits], where[hits]] = values[hits]
    return out
