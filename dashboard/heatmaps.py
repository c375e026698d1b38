"""Histogram heatmaps: cumulative `_bucket` rates turned into per-bucket rates.

`Rate(key, by=("instance", "le"))` gives, per replica and bucket edge, the rate of
observations at or below the edge. A heatmap row is one bucket (the observations
between its lower and upper edge), so the rates are differenced edge by edge, with
edges sorted as numbers and `+Inf` last. Nothing here knows about plotly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dashboard.queries import ResultSeries

# Bucket rates come from separate series; differences this small are float rounding, not a
# histogram counting down (Prometheus' rate extrapolation keeps one replica's buckets monotone).
BUCKET_NOISE_RELATIVE = 1e-9
BUCKET_NOISE_ABSOLUTE = 1e-12

Column = list[float | None]
HistogramKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class BucketRates:
    edges: tuple[float, ...]  # upper edges, ascending, +Inf last when present
    rows: tuple[Column, ...]  # rows[bucket][step]: observations/s in that bucket, None = gap
    notes: tuple[str, ...]
    blanked_steps: int = 0  # steps left blank because their buckets counted down

    @property
    def labels(self) -> list[str]:
        return [edge_label(edge) for edge in self.edges]


def edge_label(edge: float) -> str:
    if edge == math.inf:
        return "+Inf"
    if edge.is_integer() and abs(edge) < 1e15:
        return f"≤{int(edge)}"
    return f"≤{edge:g}"


def _parse_le(text: str) -> float:
    try:
        return float(text)  # "1" and "1.0" are one edge; "+Inf" parses too
    except ValueError:
        return math.nan


def _merge(old: Column | None, new: Column) -> Column:
    if old is None:
        return new
    return [b if a is None else a if b is None else a + b for a, b in zip(old, new, strict=True)]


def _histograms(series: Sequence[ResultSeries]) -> dict[HistogramKey, dict[float, Column]]:
    """Series grouped into histograms (labels other than `le`), keyed by numeric edge."""
    histograms: dict[HistogramKey, dict[float, Column]] = {}
    for one in series:
        edge = _parse_le(one.labels.get("le", ""))
        if math.isnan(edge):
            continue
        key = tuple(sorted((k, v) for k, v in one.labels.items() if k != "le"))
        buckets = histograms.setdefault(key, {})
        buckets[edge] = _merge(buckets.get(edge), list(one.values))
    return histograms


def _layout_notes(edge_sets: list[set[float]], edges: list[float]) -> list[str]:
    notes = []
    uncommon = sorted(set.union(*edge_sets) - set(edges))
    if uncommon:
        shown = ", ".join(f"{e:g}" for e in uncommon[:4]) + (", …" if len(uncommon) > 4 else "")
        # Short: the note sits above a one-third-width chart and plotly does not wrap it.
        notes.append(f"le={shown} not on all replicas: merged up")
    if edges and edges[-1] != math.inf:
        notes.append(f"no +Inf bucket: observations above {edges[-1]:g} are not shown")
    return notes


def _cumulative_at(
    histograms: Sequence[dict[float, Column]], edges: Sequence[float], step: int
) -> list[float] | None:
    """Fleet-wide cumulative rates at `step`: the sum over replicas with every edge present."""
    total: list[float] | None = None
    for buckets in histograms:
        column = [buckets[edge][step] for edge in edges]
        if any(v is None for v in column):
            continue  # this replica has no value here; the others still add up, as `sum` does
        present = [float(v) for v in column if v is not None]
        total = present if total is None else [a + b for a, b in zip(total, present, strict=True)]
    return total


def _decumulate(cumulative: Sequence[float]) -> tuple[list[float], int | None]:
    """Per-bucket rates, or the index of the first edge where the buckets count down."""
    counts, below = [], 0.0
    for index, value in enumerate(cumulative):
        count = value - below
        if count < 0:
            noise = BUCKET_NOISE_RELATIVE * max(abs(value), abs(below)) + BUCKET_NOISE_ABSOLUTE
            if -count > noise:
                return [], index
            count = 0.0
        counts.append(count)
        below = max(below, value)
    return counts, None


def bucket_rates(series: Sequence[ResultSeries]) -> BucketRates:
    """Per-bucket rates from cumulative `_bucket` rate series on one step grid.

    Series that differ in labels other than `le` are separate histograms (replicas whose
    `max_model_len` gives other token buckets): only edges every one of them has are
    shown, so a sum never mixes layouts. A step whose buckets count down by more than
    float noise cannot be trusted and is left blank, with a note.
    """
    histograms = _histograms(series)
    if not histograms:
        return BucketRates((), (), ())
    edge_sets = [set(buckets) for buckets in histograms.values()]
    edges = sorted(set.intersection(*edge_sets))
    notes = _layout_notes(edge_sets, edges)
    steps = len(series[0].values)
    rows: list[Column] = [[None] * steps for _ in edges]
    falling: dict[float, int] = {}
    for step in range(steps):
        cumulative = _cumulative_at(list(histograms.values()), edges, step)
        if cumulative is None:
            continue
        counts, bad = _decumulate(cumulative)
        if bad is not None:
            falling[edges[bad]] = falling.get(edges[bad], 0) + 1
            continue
        for row, count in zip(rows, counts, strict=True):
            row[step] = count
    notes += [
        f"buckets decrease at le={edge:g} in {count} step(s): left blank, not trusted"
        for edge, count in sorted(falling.items())
    ]
    return BucketRates(tuple(edges), tuple(rows), tuple(notes), sum(falling.values()))
