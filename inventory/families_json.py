"""Parsed families as JSON-safe data (NaN and infinities as strings, never bare tokens)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from inventory.exposition import Family


def number_json(value: float) -> float | str:
    """Prometheus spellings for non-finite values, so the JSON stays valid everywhere."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return value


def families_json(families: Iterable[Family]) -> list[dict[str, Any]]:
    return [
        {
            "name": family.name,
            "type": family.type,
            "help": family.help,
            "unit": family.unit,
            "problems": list(family.problems),
            "samples": [
                {
                    "name": sample.name,
                    "labels": dict(sample.labels),
                    "value": number_json(sample.value),
                    "timestamp": sample.timestamp,
                }
                for sample in family.samples
            ],
        }
        for family in families
    ]
