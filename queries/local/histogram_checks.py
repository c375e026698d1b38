"""Refusing histograms whose raw buckets cannot give trustworthy percentiles (reliability
E30), checked on the store's chunks: one matrix per instance, not a pass per series."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence

import numpy as np

from inventory.store import LabelSet, SeriesChunk
from queries.histogram_math import parse_le

# `_count` and the `+Inf` bucket are the same number; allow only float summation noise.
COUNT_RELATIVE_TOLERANCE = 1e-9


class BadHistogram(Exception):
    """The raw buckets cannot give a trustworthy quantile (reliability E30)."""


def _without_le(key: LabelSet) -> LabelSet:
    # Keys are sorted label pairs: `le` is where bisection puts it, if anywhere.
    at = bisect_left(key, ("le",))
    return key[:at] + key[at + 1 :] if at < len(key) and key[at][0] == "le" else key


def _where(key: LabelSet) -> str:
    return ", ".join(f"{k}={v}" for k, v in key)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.10g}"


def _histograms(chunk: SeriesChunk) -> dict[LabelSet, dict[float, int]]:
    """Each histogram of `chunk` (its labels without `le`) with its rows by edge."""
    rows: dict[LabelSet, dict[float, int]] | None = chunk.memo.get("histograms")
    if rows is None:
        rows = {}
        for i, key in enumerate(chunk.keys):
            edge = parse_le(chunk.labels[i].get("le", "nan"))
            rows.setdefault(_without_le(key), {})[edge] = i
        chunk.memo["histograms"] = rows
    return rows


class _Layout:
    """A chunk's histograms laid end to end, each sorted by edge: checking a chunk is a
    few numpy passes over one reordered matrix, whatever its number of histograms."""

    def __init__(self, chunk: SeriesChunk) -> None:
        self.missing_inf: list[LabelSet] = []
        self.keys: list[LabelSet] = []
        self.edges: list[list[float]] = []
        order: list[int] = []
        starts: list[int] = []
        for key, by_edge in sorted(_histograms(chunk).items()):
            if math.inf not in by_edge:
                self.missing_inf.append(key)
                continue
            edges = sorted(by_edge)
            starts.append(len(order))
            order += [by_edge[edge] for edge in edges]
            self.keys.append(key)
            self.edges.append(edges)
        self.order = np.array(order, dtype=np.intp)
        self.starts = np.array(starts, dtype=np.intp)
        # The histogram of each pair of neighbouring rows, -1 where a pair spans two.
        owner = np.repeat(np.arange(len(starts)), np.diff([*starts, len(order)]))
        self.pair_histogram = np.where(owner[1:] == owner[:-1], owner[:-1], -1)


def _layout(chunk: SeriesChunk) -> _Layout:
    found = chunk.memo.get("layout")
    if found is None:
        found = chunk.memo["layout"] = _Layout(chunk)
    return found


def check_histograms(chunks: Sequence[SeriesChunk], name: str) -> None:
    """Refuse buckets without `+Inf`, or whose cumulative counts fall as `le` grows, at
    any frame where every bucket of that histogram was scraped. With several broken, the
    message names the first in label order, every time."""
    problems: list[tuple[LabelSet, str]] = []
    for chunk in chunks:
        layout = _layout(chunk)
        problems += [(key, f"{name}{{{_where(key)}}} has no +Inf bucket")
                     for key in layout.missing_inf]  # fmt: skip
        if len(layout.order) < 2:
            continue
        table = chunk.values[layout.order]  # (rows, frames), histogram after histogram
        gaps = np.logical_or.reduceat(np.isnan(table), layout.starts, axis=0)
        inside = np.flatnonzero(layout.pair_histogram >= 0)
        owner = layout.pair_histogram[inside]
        falling = (table[inside + 1] < table[inside]) & ~gaps[owner]
        for pair in np.flatnonzero(falling.any(axis=1)):
            h = int(owner[pair])
            edge = layout.edges[h][int(inside[pair]) - int(layout.starts[h]) + 1]
            problems.append(
                (layout.keys[h], f"{name}{{{_where(layout.keys[h])}}} has decreasing buckets "
                                 f"at le={edge:g}")
            )  # fmt: skip
    if problems:
        # min: the first histogram in label order; its first falling edge (edges ascend).
        first = min(problems, key=lambda problem: problem[0])
        raise BadHistogram(first[1])


def check_counts(buckets: Sequence[SeriesChunk], counts: Sequence[SeriesChunk], name: str) -> None:
    """Refuse a histogram whose `_count` differs from its `+Inf` bucket at a sample time:
    the exporter is broken, and quantiles, fractions and means would all be wrong."""
    infinite: dict[LabelSet, tuple[SeriesChunk, int]] = {}
    for chunk in buckets:
        for key, by_edge in _histograms(chunk).items():
            if math.inf in by_edge:
                infinite.setdefault(key, (chunk, by_edge[math.inf]))
    # (count rows, +Inf rows, their histograms) on identical times, stacked: a fleet
    # scraped together is compared in one pass.
    batches: list[tuple[np.ndarray, list[np.ndarray], list[np.ndarray], list[LabelSet]]] = []
    for chunk in counts:
        pairs: dict[int, tuple[SeriesChunk, list[int], list[int], list[LabelSet]]] = {}
        for i, key in enumerate(chunk.keys):
            found = infinite.get(_without_le(key))
            if found is not None:  # none: check_histograms says so where it matters
                bucket, row = found
                entry = pairs.setdefault(id(bucket), (bucket, [], [], []))
                entry[1].append(i)
                entry[2].append(row)
                entry[3].append(_without_le(key))
        for bucket, mine, theirs, keys in pairs.values():
            times = chunk.times
            if bucket.times is times or np.array_equal(bucket.times, times):
                count, inf = chunk.values[mine], bucket.values[theirs]
            else:  # one instance's chunks share its frames; compare at common times anyway
                times, at_mine, at_theirs = np.intersect1d(
                    chunk.times, bucket.times, return_indices=True
                )
                count = chunk.values[mine][:, at_mine]
                inf = bucket.values[theirs][:, at_theirs]
            batch = next((b for b in batches if b[0] is times or np.array_equal(b[0], times)), None)
            if batch is None:
                batch = (times, [], [], [])
                batches.append(batch)
            batch[1].append(count)
            batch[2].append(inf)
            batch[3].extend(keys)
    failures = []
    with np.errstate(invalid="ignore"):
        for _, count_parts, inf_parts, keys in batches:
            count, inf = np.vstack(count_parts), np.vstack(inf_parts)
            differs = np.abs(count - inf) > COUNT_RELATIVE_TOLERANCE * np.maximum(
                1.0, np.maximum(np.abs(count), np.abs(inf))
            )
            for r in np.flatnonzero(differs.any(axis=1)):
                first = int(np.argmax(differs[r]))
                failures.append(
                    (
                        keys[r],
                        f"{name}{{{_where(keys[r])}}} has _count {_number(count[r, first])} "
                        f"but +Inf bucket {_number(inf[r, first])}",
                    )
                )
    if failures:
        raise BadHistogram(min(failures)[1])
