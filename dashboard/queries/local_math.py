"""Prometheus' evaluation rules, in numpy, for the local backend (no Django here).

Written from Prometheus 2.42's documented semantics (the version the tests run):
range selectors take samples with range_start <= t <= range_end; `rate` and
`increase` extrapolate towards the range edges; instant lookups take the last
sample at most 5 minutes old unless a stale marker came after it;
`histogram_quantile` interpolates linearly inside the bucket holding the rank.
Absent values are NaN throughout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

LOOKBACK_SECONDS = 300.0


def counter_deltas(
    times: np.ndarray,
    values: np.ndarray,
    steps: np.ndarray,
    range_seconds: float,
    *,
    is_counter: bool = True,
    is_rate: bool = True,
) -> np.ndarray:
    """`rate` (or `increase` with is_rate=False) of one series at each of `steps`.

    A drop between consecutive samples is a counter reset: the increase counts
    the new value from zero (1000 -> 5 adds 5, never -995).
    """
    rows = counter_deltas_rows(
        times, values[np.newaxis, :], steps, range_seconds, is_counter=is_counter,
        is_rate=is_rate,
    )  # fmt: skip
    return rows[0]


def counter_deltas_rows(
    times: np.ndarray,
    values: np.ndarray,
    steps: np.ndarray,
    range_seconds: float,
    *,
    is_counter: bool = True,
    is_rate: bool = True,
) -> np.ndarray:
    """`counter_deltas` of many series sampled at the same `times` (one per row of
    `values`) in one pass: the buckets of one histogram on one endpoint, say."""
    out = np.full((values.shape[0], len(steps)), np.nan)
    if len(times) < 2:
        return out
    lo = np.searchsorted(times, steps - range_seconds, side="left")
    hi = np.searchsorted(times, steps, side="right") - 1
    ok = (hi - lo) >= 1
    if not ok.any():
        return out
    # Prefix sums of "value before each reset", so any window's correction is a difference.
    previous, current = values[:, :-1], values[:, 1:]
    bumps = np.where(current < previous, previous, 0.0) if is_counter else np.zeros(current.shape)
    corrections = np.concatenate((np.zeros((values.shape[0], 1)), np.cumsum(bumps, axis=1)), 1)
    first, last = lo[ok], hi[ok]
    first_value, last_value = values[:, first], values[:, last]
    result = last_value - first_value + corrections[:, last] - corrections[:, first]
    range_end = steps[ok]
    to_start = times[first] - (range_end - range_seconds)
    to_end = range_end - times[last]
    sampled = times[last] - times[first]
    average = sampled / (last - first)
    if is_counter:
        # Do not extrapolate below zero: a counter cannot have started before it was 0.
        can_hit_zero = (result > 0) & (first_value >= 0)
        to_zero = sampled * first_value / np.where(result > 0, result, 1.0)
        to_start = np.where(can_hit_zero & (to_zero < to_start), to_zero, to_start)
    threshold = average * 1.1
    interval = (
        sampled
        + np.where(to_start < threshold, to_start, average / 2)
        + np.where(to_end < threshold, to_end, average / 2)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        result = result * (interval / sampled)
    if is_rate:
        result = result / range_seconds
    out[:, ok] = result
    return out


def instant_values(
    times: np.ndarray,
    values: np.ndarray,
    events: np.ndarray,
    steps: np.ndarray,
    lookback_seconds: float = LOOKBACK_SECONDS,
) -> np.ndarray:
    """The value of one series at each step: its last sample within the lookback, unless its
    endpoint scraped since then without it (the stale marker Prometheus would have written)."""
    out = np.full(len(steps), np.nan)
    if len(times) == 0:
        return out
    sample = np.searchsorted(times, steps, side="right") - 1
    event = np.searchsorted(events, steps, side="right") - 1
    has_sample = sample >= 0
    sample_time = np.where(has_sample, times[np.maximum(sample, 0)], -np.inf)
    last_event = np.where(event >= 0, events[np.maximum(event, 0)], -np.inf)
    fresh = has_sample & (steps - sample_time <= lookback_seconds) & (last_event <= sample_time)
    out[fresh] = values[sample[fresh]]
    return out


def bucket_quantile(q: float, edges: Sequence[float], counts: Sequence[float]) -> float:
    """`histogram_quantile` of one histogram: `edges` are upper bounds (+Inf included),
    `counts` cumulative. Returns NaN when Prometheus would (no +Inf, no observations)."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    merged: dict[float, float] = {}
    for edge, count in zip(edges, counts, strict=True):
        if not math.isnan(count):
            merged[edge] = merged.get(edge, 0.0) + count  # "1" and "1.0" are one bucket
    bounds = sorted(merged)
    if len(bounds) < 2 or bounds[-1] != math.inf:
        return math.nan
    # Rates of separate bucket series can come out slightly non-monotonic; Prometheus
    # repairs that by carrying the running maximum, and so does this.
    cumulative, highest = [], -math.inf
    for bound in bounds:
        highest = max(highest, merged[bound])
        cumulative.append(highest)
    observations = cumulative[-1]
    if observations == 0 or math.isnan(observations):
        return math.nan
    rank = q * observations
    index = next(i for i, c in enumerate(cumulative) if c >= rank)
    if index == len(bounds) - 1:
        return bounds[-2]
    if index == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[index], cumulative[index]
    if index > 0:
        start = bounds[index - 1]
        count -= cumulative[index - 1]
        rank -= cumulative[index - 1]
    return start + (end - start) * (rank / count)


def bucket_quantiles(q: float, edges: Sequence[float], counts: np.ndarray) -> np.ndarray:
    """`bucket_quantile` of each row of `counts` (steps x edges), the same numbers in one
    numpy pass; rows with a missing or non-finite count take the one-row path."""
    out = np.full(counts.shape[0], np.nan)
    finite = np.isfinite(counts).all(axis=1)
    if not 0 < q <= 1 or not finite.any() or any(math.isnan(edge) for edge in edges):
        return np.array([bucket_quantile(q, edges, row) for row in counts])
    for i in np.flatnonzero(~finite):
        out[i] = bucket_quantile(q, edges, counts[i])
    bounds = sorted(set(edges))
    if len(bounds) < 2 or bounds[-1] != math.inf:
        return out
    rows = counts[finite]
    # "1" and "1.0" are one bucket: add them up, in the order bucket_quantile does.
    merged = np.zeros((rows.shape[0], len(bounds)))
    column = {bound: i for i, bound in enumerate(bounds)}
    for j, edge in enumerate(edges):
        merged[:, column[edge]] += rows[:, j]
    cumulative = np.maximum.accumulate(merged, axis=1)
    observations = cumulative[:, -1]
    rank = q * observations
    index = np.argmax(cumulative >= rank[:, np.newaxis], axis=1)
    upper = np.array(bounds)[index]
    lower = np.where(index > 0, np.array([0.0, *bounds])[index], 0.0)
    below = np.where(index > 0, cumulative[np.arange(len(index)), np.maximum(index - 1, 0)], 0.0)
    count = cumulative[np.arange(len(index)), index] - below
    with np.errstate(divide="ignore", invalid="ignore"):
        found = lower + (upper - lower) * ((rank - below) / count)
    found = np.where(index == len(bounds) - 1, bounds[-2], found)
    found = np.where((index == 0) & (bounds[0] <= 0), bounds[0], found)
    found = np.where(observations == 0, np.nan, found)
    out[finite] = found
    return out


def parse_le(text: str) -> float:
    """A bucket's `le` as a float ("1" and "1.0" are the same edge); NaN if unreadable."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def group_sums(values: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray | None:
    """`sum` of the rows of `values` (series x steps) per group (`groups[i]` is row i's,
    0 <= group < count), to the bit what pandas' `groupby(groups).sum(min_count=1)` gives;
    None where that takes pandas' own `np.add.reduceat` path (groups in order, no NaN),
    unless every group is one row, which that path hands back unchanged.

    Otherwise pandas adds a group's present (non-NaN) values in row order with Kahan
    compensation from 0.0, a group and step with none present being NaN (never 0); this
    does the same, vectorised over groups: pass k adds every group's k-th row.
    """
    if not np.isnan(values).any() and (np.diff(groups) >= 0).all():
        return values.astype(np.float64) if count == len(groups) else None
    steps = values.shape[1]
    total = np.zeros((count, steps))
    compensation = np.zeros((count, steps))
    present = np.zeros((count, steps), dtype=bool)
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(count))
    sizes = np.bincount(groups, minlength=count)
    for k in range(int(sizes.max(initial=0))):
        which = np.flatnonzero(sizes > k)
        value = values[order[starts[which] + k]]
        seen = ~np.isnan(value)
        before = total[which]
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, as in pandas
            y = value - compensation[which]
            t = before + y
            c = t - before - y
        # An infinite value makes the compensation NaN; pandas resets it to 0 (GH#53606).
        c[np.isnan(c)] = 0.0
        total[which] = np.where(seen, t, before)
        compensation[which] = np.where(seen, c, compensation[which])
        present[which] |= seen
    return np.where(present, total, np.nan)
