"""`histogram_quantile` maths on cumulative bucket counts, shared by both backends: the
Prometheus-compatible value (`bucket_quantile`, `bucket_quantiles`) and the bucket it
falls in (`quantile_bucket`, `bucket_quantiles_bounded`). Plain numpy, no Django."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def parse_le(text: str) -> float:
    """A bucket's `le` as a float ("1" and "1.0" are the same edge); NaN if unreadable."""
    try:
        return float(text)
    except ValueError:
        return math.nan


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


def quantile_bucket(
    q: float, edges: Sequence[float], counts: Sequence[float]
) -> tuple[float, float]:
    """The bucket (lower, upper] that `bucket_quantile(q, edges, counts)` falls in, by the
    same rules (NaN counts skipped, "1" and "1.0" one bucket, running maximum); upper is
    +Inf when the quantile lies past the last finite edge, (NaN, NaN) when there is none."""
    if not 0 < q <= 1:
        return math.nan, math.nan
    merged: dict[float, float] = {}
    for edge, count in zip(edges, counts, strict=True):
        if not math.isnan(count):
            merged[edge] = merged.get(edge, 0.0) + count
    bounds = sorted(merged)
    if len(bounds) < 2 or bounds[-1] != math.inf:
        return math.nan, math.nan
    cumulative, highest = [], -math.inf
    for bound in bounds:
        highest = max(highest, merged[bound])
        cumulative.append(highest)
    if cumulative[-1] == 0 or math.isnan(cumulative[-1]):
        return math.nan, math.nan
    index = next(i for i, c in enumerate(cumulative) if c >= q * cumulative[-1])
    if index == 0:
        return (bounds[0] if bounds[0] <= 0 else 0.0), bounds[0]
    return bounds[index - 1], bounds[index]


def bucket_quantiles_bounded(
    q: float, edges: Sequence[float], counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`bucket_quantiles` of each row with the bucket it fell in: (values, lower, upper).

    Honest where Prometheus is not: a quantile past the last finite edge has no value
    (NaN; `histogram_quantile` would report the edge itself), only the lower bound it
    is known to exceed, with upper = +Inf."""
    values = bucket_quantiles(q, edges, counts)
    lower = np.full(counts.shape[0], np.nan)
    upper = np.full(counts.shape[0], np.nan)
    bounds = sorted(set(edges))
    finite = np.isfinite(counts).all(axis=1)
    usable = 0 < q <= 1 and len(bounds) >= 2 and bounds[-1] == math.inf
    if usable and finite.any() and not any(math.isnan(edge) for edge in edges):
        rows = counts[finite]
        merged = np.zeros((rows.shape[0], len(bounds)))
        column = {bound: i for i, bound in enumerate(bounds)}
        for j, edge in enumerate(edges):
            merged[:, column[edge]] += rows[:, j]
        cumulative = np.maximum.accumulate(merged, axis=1)
        observations = cumulative[:, -1]
        index = np.argmax(cumulative >= (q * observations)[:, np.newaxis], axis=1)
        tops = np.array(bounds)
        first_lower = bounds[0] if bounds[0] <= 0 else 0.0
        bottoms = np.array([first_lower, *bounds[:-1]])
        empty = observations == 0
        lower[finite] = np.where(empty, np.nan, bottoms[index])
        upper[finite] = np.where(empty, np.nan, tops[index])
    for i in np.flatnonzero(~finite) if usable else range(counts.shape[0]):
        lower[i], upper[i] = quantile_bucket(q, edges, counts[i])
    values = np.where(np.isinf(upper), np.nan, values)
    return values, lower, upper
