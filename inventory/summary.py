"""What one endpoint exposes, summarised per family for the inventory and drift report."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypedDict

from inventory.exposition import Family


class FamilySummary(TypedDict):
    type: str
    help: str
    unit: str
    label_names: list[str]
    series: int
    buckets: list[float] | None
    problems: list[str]


def summarize_families(families: Iterable[Family]) -> dict[str, FamilySummary]:
    summary: dict[str, FamilySummary] = {}
    for family in families:
        label_names: set[str] = set()
        series: set[frozenset[tuple[str, str]]] = set()
        edges: set[float] = set()
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue
            labels = sample.labels
            if sample.name.endswith("_bucket") and "le" in labels:
                edges.add(_edge(labels["le"]))
                key = frozenset((k, v) for k, v in labels.items() if k != "le")
            else:
                key = frozenset(labels.items())
            series.add(key)
            label_names.update(k for k in labels if k != "le")
        summary[family.name] = {
            "type": family.type,
            "help": family.help,
            "unit": family.unit,
            "label_names": sorted(label_names),
            # A histogram series is counted once, not once per bucket.
            "series": len(series),
            "buckets": sorted(e for e in edges if math.isfinite(e)) if edges else None,
            "problems": list(family.problems),
        }
    return summary


def _edge(text: str) -> float:
    # "1" and "1.0" are the same edge; normalise before comparing across replicas.
    try:
        return float(text)
    except ValueError:
        return math.nan
