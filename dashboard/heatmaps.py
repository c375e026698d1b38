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

import numpy as np

from queries import ResultSeries

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


def _merge(old: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    if old is None:
        return new
    # Two spellings of one edge ("1" and "1.0") add up; a gap in one keeps the other's value.
    return np.where(np.isnan(old), new, np.where(np.isnan(new), old, old + new))


def _histograms(series: Sequence[ResultSeries]) -> dict[HistogramKey, dict[float, np.ndarray]]:
    """Series grouped into histograms (labels other than `le`), keyed by numeric edge."""
    histograms: dict[HistogramKey, dict[float, np.ndarray]] = {}
    for one in series:
        edge = _parse_le(one.labels.get("le", ""))
        if math.isnan(edge):
            continue
        key = tuple(sorted((k, v) for k, v in one.labels.items() if k != "le"))
        buckets = histograms.setdefault(key, {})
        buckets[edge] = _merge(buckets.get(edge), one.floats)
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


def _fleet_cumulative(
    histograms: Sequence[dict[float, np.ndarray]], edges: Sequence[float], steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """Fleet-wide cumulative rates, [edge, step], and the steps where any replica had every
    edge: the sum over those replicas, as `sum` does (one replica's gap leaves the rest)."""
    total = np.zeros((len(edges), steps))
    counted = np.zeros(steps, dtype=bool)
    for buckets in histograms:
        column = np.vstack([buckets[edge] for edge in edges])
        whole = ~np.isnan(column).any(axis=0)
        # The first replica at a step is taken as is, later ones added in order: the same
        # floats as adding them one by one, down to the sign of a zero.
        total = np.where(whole, np.where(counted, total + column, column), total)
        counted |= whole
    return total, counted


def _decumulate(cumulative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-bucket rates, [edge, step], and per step the index of the first edge where the
    buckets count down by more than float noise (-1 where they never do)."""
    # What the edges below have counted so far: the running maximum, from 0. numpy may keep
    # -0.0 where 0.0 ties with it; "+ 0.0" makes that 0.0 (and changes no other number), so a
    # zero bucket is written with the same sign as the one-value-at-a-time rule gives it.
    previous = np.vstack([np.zeros((1, cumulative.shape[1])), cumulative[:-1]])
    below = np.maximum.accumulate(previous, axis=0) + 0.0
    counts = cumulative - below
    falling = counts < 0
    noise = (
        BUCKET_NOISE_RELATIVE * np.maximum(np.abs(cumulative), np.abs(below))
        + BUCKET_NOISE_ABSOLUTE
    )
    counting_down = falling & (-counts > noise)
    first = np.where(counting_down.any(axis=0), counting_down.argmax(axis=0), -1)
    return np.where(falling, 0.0, counts), first


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
    if not edges:
        return BucketRates((), (), tuple(notes))
    cumulative, counted = _fleet_cumulative(list(histograms.values()), edges, len(series[0].values))
    counts, first_falling = _decumulate(cumulative)
    untrusted = counted & (first_falling >= 0)
    per_edge = np.bincount(first_falling[untrusted], minlength=len(edges)).tolist()
    falling = {edge: n for edge, n in zip(edges, per_edge, strict=True) if n}
    shown = counts.astype(object)
    shown[:, ~(counted & ~untrusted)] = None
    rows: list[Column] = shown.tolist()
    notes += [
        f"buckets decrease at le={edge:g} in {count} step(s): left blank, not trusted"
        for edge, count in falling.items()
    ]
    return BucketRates(tuple(edges), tuple(rows), tuple(notes), sum(falling.values()))
