"""Our parse and prometheus_client's beside each other, as comparable views.

prometheus_client's `openmetrics.parser.text_string_to_metric_families` implements
the specification's rules strictly, so it is the oracle: any exception it raises is a
rejection (it is lazy and raises KeyError and friends besides ValueError), and when both
accept we must read the same families, samples, labels and values."""

from __future__ import annotations

import math
from typing import Any

from prometheus_client.openmetrics.parser import text_string_to_metric_families as oracle

from inventory.exposition.parser import ExpositionError, Family, parse

__all__ = ["H", "View", "oracle", "oracle_view", "our_view", "ours"]

View = list[tuple[Any, ...]]
# The TYPE line of the histogram family `h` that many cases build on.
H = "# TYPE h histogram\n"


def _number(value: Any) -> tuple[str, float]:
    value = float(value)
    return ("nan", 0.0) if math.isnan(value) else ("num", value)


def our_view(families: list[Family]) -> View:
    return [
        (
            f.name,
            f.type,
            f.help.lstrip(" "),
            f.unit,
            [(s.name, dict(s.labels), _number(s.value), s.timestamp) for s in f.samples],
        )
        for f in families
    ]


def oracle_view(text: str) -> View | None:
    """The oracle's families, or None if it rejects the text (any exception)."""
    try:
        families = list(oracle(text))
    except Exception:  # noqa: BLE001 - any exception is the oracle's rejection
        return None
    return [
        (
            f.name,
            f.type,
            # It drops the blanks that open a HELP text (it splits metadata at runs of spaces).
            f.documentation.lstrip(" "),
            f.unit,
            [
                (
                    s.name,
                    dict(s.labels),
                    _number(s.value),
                    None if s.timestamp is None else float(s.timestamp),
                )
                for s in f.samples
            ],
        )
        for f in families
    ]


def ours(text: str) -> View | None:
    try:
        return our_view(parse(text, openmetrics=True))
    except ExpositionError:
        return None
