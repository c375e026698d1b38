"""Attainment from counts, never more precise than the buckets allow.

A latency threshold on a bucket edge every replica shares gives the exact fraction; any
other threshold gives the interval between the fractions at the shared edges around it.
Counts by finished_reason give the success ratio exactly.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

from slo.evaluation.figures import Interval

INF = math.inf


def ms(seconds: float) -> str:
    """A threshold or edge as people write it: 250 ms, 1.5 s."""
    if seconds < 1:
        return f"{seconds * 1000:.4g} ms"
    return f"{seconds:.4g} s"


def events_of(counts: Mapping[Any, float] | None) -> float | None:
    """All events counted: the +Inf bucket, or every finish."""
    if not counts:
        return None
    total = counts[INF] if INF in counts else sum(counts.values())
    return total if total > 0 else None


def latency_attainment(
    counts: Mapping[float, float] | None, threshold: float
) -> tuple[Interval | None, float | None, float | None]:
    """(fraction of events <= threshold, the shared edge below, the shared edge above);
    both edges are the threshold itself when it is one."""
    total = events_of(counts)
    if total is None or counts is None:
        return None, None, None
    edges = sorted(e for e in counts if math.isfinite(e))
    if threshold in counts:
        value = _clamp(counts[threshold] / total)
        return Interval.exact(value), threshold, threshold
    below = max((e for e in edges if e < threshold), default=None)
    above = min((e for e in edges if e > threshold), default=INF)
    low = counts[below] / total if below is not None else 0.0
    high = counts[above] / total if above != INF else 1.0
    low, high = _clamp(low), _clamp(high)
    # Extrapolated increases of separate series can cross by rounding noise.
    return Interval(min(low, high), max(low, high)), below, above


def success_attainment(
    counts: Mapping[str, float] | None, bad_reasons: Collection[str]
) -> Interval | None:
    total = events_of(counts)
    if total is None or counts is None:
        return None
    bad = sum(v for reason, v in counts.items() if reason in bad_reasons)
    return Interval.exact(_clamp(1.0 - bad / total))


def latency_reason(
    threshold: float,
    below: float | None,
    above: float | None,
    edges_by_instance: Mapping[str, tuple[float, ...]],
) -> str:
    """How precise a latency attainment is, and why, in the page's words."""
    replicas = len(edges_by_instance)
    off_edge = sum(threshold not in edges for edges in edges_by_instance.values())
    if below == threshold:
        return f"exact: {ms(threshold)} is a bucket edge on all {replicas} replicas"
    if above is None:
        return "no data"
    low = "0" if below is None else ms(below)
    high = "+Inf" if above == INF else ms(above)
    where = f"on {off_edge} of {replicas} replicas" if off_edge else "on no replica's own grid"
    text = f"threshold {ms(threshold)} lies between buckets {low} and {high} {where}"
    if off_edge < replicas:
        text += f"; it is an edge on {replicas - off_edge}, but not one every replica shares"
    if above == INF:
        text += "; it is past the last shared finite edge, so the upper bound is 100%"
    return text + ": shown as an interval"


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))
