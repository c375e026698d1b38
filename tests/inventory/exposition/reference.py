"""Our families and prometheus_client's (the reference implementation) in one shape, with
the deliberate differences listed in `inventory.exposition.parser` undone."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families as reference_text

from inventory.exposition.parser import Family, parse

View = list[tuple[str, str, str, list[tuple[Any, ...]]]]


def _number(value: float) -> tuple[str, float]:
    # NaN never equals itself; compare it by kind instead.
    value = float(value)
    return ("nan", 0.0) if math.isnan(value) else ("num", value)


def _timestamp(value: Any) -> float | None:
    return None if value is None else float(value)


def our_view(families: Iterable[Family]) -> View:
    return [
        (
            family.name,
            family.type,
            family.help.strip(),
            [
                (s.name, dict(s.labels), _number(s.value), _timestamp(s.timestamp))
                for s in family.samples
            ],
        )
        for family in families
    ]


def reference_view(families: Iterable[Any]) -> View:
    """prometheus_client's families, reshaped where our shape differs on purpose.

    It yields one family per sample of a name without metadata (we group them),
    leaves `<base>_created` gauges as families of their own (we fold them) and keeps
    every line of a series listed twice (we keep the first, as Prometheus does).
    Its renaming of counters declared without `_total` is undone separately.
    """
    out: View = []
    for family in families:
        samples = [
            (s.name, dict(s.labels), _number(s.value), _timestamp(s.timestamp))
            for s in family.samples
        ]
        previous = out[-1] if out else None
        if previous is not None:
            if family.type == "unknown" and previous[1] == "unknown" and previous[0] == family.name:
                previous[3].extend(samples)
                continue
            if (
                family.type == "gauge"
                and previous[1] in ("counter", "histogram", "summary")
                and family.name == previous[0] + "_created"
            ):
                previous[3].extend(samples)
                continue
        out.append((family.name, family.type, family.documentation.strip(), samples))
    for _, _, _, samples in out:
        first = {(s[0], frozenset(s[1].items()), s[3]): s for s in reversed(samples)}
        samples[:] = [s for s in samples if first[(s[0], frozenset(s[1].items()), s[3])] is s]
    return out


def undo_counter_rename(view: View, ours: View) -> View:
    """A text counter declared as `x` (no _total): prometheus_client renames its samples."""
    # By name and type: a counter `x_total` and a gauge `x` are both families `x`.
    names = {(family[0], family[1]): family for family in ours}
    fixed: View = []
    for name, type_, help_, samples in view:
        mine = names.get((name, type_))
        if type_ == "counter" and mine is not None:
            declared = {s[0] for s in mine[3]}
            samples = [
                (s[0][:-6], *s[1:])
                if s[0].endswith("_total") and s[0][:-6] in declared and s[0] not in declared
                else s
                for s in samples
            ]
        fixed.append((name, type_, help_, samples))
    return fixed


def assert_agrees_with_reference(text: str) -> None:
    ours = our_view(parse(text))
    reference = undo_counter_rename(reference_view(reference_text(text)), ours)
    assert ours == reference
