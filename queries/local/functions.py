"""Prometheus' evaluation rules, in numpy, for the local backend (no Django here).

Written from Prometheus 2.42's documented semantics (the version the tests run):
range selectors take samples with range_start <= t <= range_end; `rate` and
`increase` extrapolate towards the range edges; instant lookups take the last
sample at most 5 minutes old unless a stale marker came after it;
(`histogram_quantile`'s maths is shared with the PromQL backend: queries.histogram_math.)
Absent values are NaN throughout.
"""

from __future__ import annotations

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
    """`rate` (or `increase` with is_rate=False) of one series at each of `steps`, step by
    step as Prometheus' `extrapolatedRate` does it: the reference `counter_deltas_rows`
    is held to (to the bit for whole-number counters; for fractional ones with resets,
    within rounding, as its prefix sums add the resets in another order).

    A drop between consecutive samples is a counter reset: the increase counts
    the new value from zero (1000 -> 5 adds 5, never -995).
    """
    out = np.full(len(steps), np.nan)
    for i, range_end in enumerate(steps):
        range_start = range_end - range_seconds
        inside = np.flatnonzero((times >= range_start) & (times <= range_end))
        if len(inside) < 2:
            continue
        first, last = int(inside[0]), int(inside[-1])
        result = float(values[last] - values[first])
        if is_counter:
            for j in range(first + 1, last + 1):
                if values[j] < values[j - 1]:
                    result += float(values[j - 1])
        to_start = float(times[first]) - range_start
        to_end = float(range_end) - float(times[last])
        sampled = float(times[last] - times[first])
        average = sampled / (last - first)
        first_value = float(values[first])
        if is_counter and result > 0 and first_value >= 0:
            # Do not extrapolate below zero: a counter cannot have started before it was 0.
            to_zero = sampled * first_value / result
            if to_zero < to_start:
                to_start = to_zero
        threshold = average * 1.1
        interval = sampled
        interval += to_start if to_start < threshold else average / 2
        interval += to_end if to_end < threshold else average / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            result = float(np.float64(result) * (np.float64(interval) / np.float64(sampled)))
        out[i] = result / range_seconds if is_rate else result
    return out


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
    `values`) in one pass: the buckets of one histogram on one endpoint, say.

    Everything that depends only on the times (the range edges, the extrapolation) is
    worked out once per step; per element there are the increase and a factor, plus the
    few elements of counters that started inside their range (see `to_zero`)."""
    out = np.full((values.shape[0], len(steps)), np.nan)
    if len(times) < 2:
        return out
    lo = np.searchsorted(times, steps - range_seconds, side="left")
    hi = np.searchsorted(times, steps, side="right") - 1
    ok = (hi - lo) >= 1
    if not ok.any():
        return out
    first, last = lo[ok], hi[ok]
    first_value = values[:, first]
    result = values[:, last] - first_value
    if is_counter:
        # Prefix sums of "value before each reset", so any window's correction is a
        # difference; only rows with a reset pay for them.
        previous, current = values[:, :-1], values[:, 1:]
        reset = current < previous
        rows = np.flatnonzero(reset.any(axis=1))
        if len(rows):
            bumps = np.where(reset[rows], previous[rows], 0.0)
            corrections = np.concatenate((np.zeros((len(rows), 1)), np.cumsum(bumps, axis=1)), 1)
            result[rows] = result[rows] + corrections[:, last] - corrections[:, first]
    range_end = steps[ok]
    to_start = times[first] - (range_end - range_seconds)
    to_end = range_end - times[last]
    sampled = times[last] - times[first]
    average = sampled / (last - first)
    threshold = average * 1.1
    to_end_part = np.where(to_end < threshold, to_end, average / 2)
    interval = sampled + np.where(to_start < threshold, to_start, average / 2) + to_end_part
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = interval / sampled
        scaled = result * factor
        if is_counter:
            # A counter cannot have started before it was 0: where it would have reached 0
            # after the range start, extrapolate only to there. That needs
            # first * sampled / result < to_start; a loose test of the same (with slack
            # for rounding) picks the few candidates, which then get the exact formula.
            near = first_value * sampled < result * (to_start * (1 + 1e-9))
            near &= (result > 0) & (first_value >= 0)
            r, c = np.nonzero(near)
            if len(r):
                to_zero = sampled[c] * first_value[r, c] / result[r, c]
                start = np.where(to_zero < to_start[c], to_zero, to_start[c])
                part = np.where(start < threshold[c], start, average[c] / 2)
                scaled[r, c] = result[r, c] * ((sampled[c] + part + to_end_part[c]) / sampled[c])
    if is_rate:
        scaled = scaled / range_seconds
    out[:, ok] = scaled
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
    return instant_values_rows(times, values[np.newaxis, :], events, steps, lookback_seconds)[0]


def instant_values_rows(
    times: np.ndarray,
    values: np.ndarray,
    events: np.ndarray,
    steps: np.ndarray,
    lookback_seconds: float = LOOKBACK_SECONDS,
) -> np.ndarray:
    """`instant_values` of many series sampled at the same `times` (one per row of
    `values`), in one pass. A NaN sample reads as NaN: where a series was missing from a
    scrape, that is the stale marker, since the scrape is one of `events`."""
    out = np.full((values.shape[0], len(steps)), np.nan)
    if len(times) == 0:
        return out
    sample = np.searchsorted(times, steps, side="right") - 1
    event = np.searchsorted(events, steps, side="right") - 1
    has_sample = sample >= 0
    sample_time = np.where(has_sample, times[np.maximum(sample, 0)], -np.inf)
    last_event = np.where(event >= 0, events[np.maximum(event, 0)], -np.inf)
    fresh = has_sample & (steps - sample_time <= lookback_seconds) & (last_event <= sample_time)
    out[:, fresh] = values[:, sample[fresh]]
    return out


def group_sums(values: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray:
    """`sum` of the rows of `values` (series x steps) per group (`groups[i]` is row i's,
    0 <= group < count), to the bit what pandas' `groupby(groups).sum(min_count=1)` gives.

    With groups in order and nothing missing pandas adds with `np.add.reduceat`, and so
    does this. Otherwise pandas adds a group's present (non-NaN) values in row order with
    Kahan compensation from 0.0, a group and step with none present being NaN (never
    0); so does this (`_kahan_sums`).
    """
    if not np.isnan(values).any() and (np.diff(groups) >= 0).all():
        starts = np.flatnonzero(np.r_[True, np.diff(groups) > 0])
        return np.add.reduceat(values.astype(np.float64), starts, axis=0)
    total, present = _kahan_sums(values, groups, count)
    return np.where(present > 0, total, np.nan)


def group_reduce(values: np.ndarray, groups: np.ndarray, count: int, agg: str) -> np.ndarray:
    """`avg`, `max` or `min` of the rows of `values` per group, NaN where a group has no
    value at a step: to the bit what pandas' `groupby(groups).mean()` / `.max()` / `.min()`
    gives (the mean adds with the same Kahan compensation as the sum)."""
    if agg == "avg":
        total, present = _kahan_sums(values, groups, count)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(present > 0, total / present, np.nan)
    if agg not in ("max", "min"):
        raise ValueError(f"unknown aggregation {agg!r}")
    pick = np.fmax if agg == "max" else np.fmin  # fmax/fmin skip NaN, as pandas does
    out = np.full((count, values.shape[1]), np.nan)
    order, starts, sizes = _group_order(groups, count)
    for k in range(int(sizes.max(initial=0))):
        which = np.flatnonzero(sizes > k)
        out[which] = pick(out[which], values[order[starts[which] + k]])
    return out


def _group_order(groups: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows in group order (stable), where each group starts, and each group's size."""
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(count))
    return order, starts, np.bincount(groups, minlength=count)


def _kahan_sums(
    values: np.ndarray, groups: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per group and step, the compensated sum of the present (non-NaN) values, added in
    row order from 0.0 as pandas does, and how many values were present; vectorised over
    groups: pass k adds every group's k-th row."""
    steps = values.shape[1]
    order, starts, sizes = _group_order(groups, count)
    # (groups, largest group, steps), NaN-padded: each pass reads one contiguous slab, and a
    # group out of rows reads NaN, which adds nothing.
    ranked = groups[order]
    cube = np.full((count, int(sizes.max(initial=0)), steps), np.nan)
    cube[ranked, np.arange(len(order)) - starts[ranked]] = values[order]
    total = np.zeros((count, steps))
    compensation = np.zeros((count, steps))
    present = np.zeros((count, steps), dtype=np.int64)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, as in pandas
        for k in range(cube.shape[1]):
            value = cube[:, k]
            seen = ~np.isnan(value)
            y = value - compensation
            t = total + y
            c = t - total - y
            # An infinite value makes the compensation NaN; pandas resets it to 0 (GH#53606).
            c[np.isnan(c)] = 0.0
            total = np.where(seen, t, total)
            compensation = np.where(seen, c, compensation)
            present += seen
    return total, present
