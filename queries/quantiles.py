"""Quantiles from bucket rates, the same on both backends, and never more precise than
the buckets: each value comes with the bucket it fell in.

Both backends hand over the bucket rates summed by (`le`, *by); this module keeps, for
each group, only the edges every contributing replica has (a group of one replica keeps
that replica's own edges; otherwise the edges shared by every replica of the scope), so
replicas bucketing differently (old and new vLLM, per-replica `max_model_len`) are
never summed as if their edges matched. Observations under a dropped edge still count
in the next kept one. A quantile past the last finite edge has no value, only the
lower bound it exceeds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from queries.histogram_math import bucket_quantiles_bounded, parse_le
from queries.plan import ResolvedKey

LabelSet = tuple[tuple[str, str], ...]


@dataclass
class Quantiles:
    values: dict[LabelSet, np.ndarray] = field(default_factory=dict)
    # Per group: the (lower, upper) edges of the bucket each step's quantile fell in.
    bounds: dict[LabelSet, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    dropped: set[float] = field(default_factory=set)  # edges left out (not on every replica)


def _group_key(labels: Mapping[str, str], by: Sequence[str]) -> LabelSet:
    # PromQL drops empty labels, so a series without a `by` label joins the "" group.
    return tuple((label, labels[label]) for label in by if labels.get(label))


def allowed_edges(resolved: ResolvedKey, group: Mapping[str, str]) -> frozenset[float]:
    """The finite edges a group may use: its replica's own when the group is one replica,
    else those every replica of the scope has."""
    instance = group.get("instance")
    own = resolved.edges_by_instance.get(instance) if instance else None
    return frozenset(resolved.buckets if own is None else own)


def quantiles_from_buckets(
    q: float, per_le: Mapping[LabelSet, np.ndarray], by: Sequence[str], resolved: ResolvedKey
) -> Quantiles:
    """`histogram_quantile(q, ...)` of bucket rates keyed by label sets holding `le` and
    the `by` labels, each group on its allowed edges, with the bucket of every value."""
    groups: dict[LabelSet, list[tuple[float, np.ndarray]]] = {}
    for key, values in per_le.items():
        labels = dict(key)
        edge = parse_le(labels.pop("le", "nan"))
        groups.setdefault(_group_key(labels, by), []).append((edge, values))
    found = Quantiles()
    # Groups on the same edges (every model of a fleet, usually) go through in one pass:
    # each row (a step of a group) is interpolated on its own.
    same_edges: dict[tuple[float, ...], list[tuple[LabelSet, np.ndarray]]] = {}
    for key, buckets in groups.items():
        allowed = allowed_edges(resolved, dict(key))
        kept = [(edge, values) for edge, values in buckets if edge in allowed or edge == math.inf]
        found.dropped.update(
            edge for edge, _ in buckets if not (edge in allowed or edge == math.inf)
        )
        if not kept:
            continue
        edges = tuple(edge for edge, _ in kept)
        same_edges.setdefault(edges, []).append((key, np.column_stack([v for _, v in kept])))
    for edges, members in same_edges.items():
        steps = members[0][1].shape[0]
        values, lower, upper = bucket_quantiles_bounded(
            q, edges, np.vstack([matrix for _, matrix in members])
        )
        for i, (key, _) in enumerate(members):
            rows = slice(i * steps, (i + 1) * steps)
            found.values[key] = values[rows]
            found.bounds[key] = (lower[rows], upper[rows])
    return found


def dropped_edges_warning(name: str, dropped: set[float]) -> str | None:
    if not dropped:
        return None
    shown = ", ".join(f"{edge:g}" for edge in sorted(dropped))
    return f"{name}: le={shown} not on every replica: counted in the next shared bucket"
