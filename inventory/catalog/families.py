"""What the catalog reads a scrape as: families and samples shaped like
`inventory.exposition.Family` (or prometheus_client's), the names they show on the wire,
and the small helpers every report shares."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol


class SampleLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def value(self) -> float: ...


class FamilyLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def help(self) -> str: ...
    @property
    def samples(self) -> Sequence[SampleLike]: ...


def is_created_family(family: FamilyLike) -> bool:
    # prometheus_client's text parser keeps `<base>_created` as its own gauge family.
    return family.type == "gauge" and family.name.endswith("_created")


def wire_names(families: Iterable[FamilyLike]) -> frozenset[str]:
    """The names as scraped: counters with `_total`, histograms by base, `_created` left out."""
    names: set[str] = set()
    for family in families:
        if is_created_family(family):
            continue
        if family.type != "counter":
            names.add(family.name)
            continue
        on_wire = {s.name for s in family.samples if not s.name.endswith("_created")}
        names |= on_wire or {family.name + "_total"}
    return frozenset(names)


def vllm_samples(families: Iterable[FamilyLike]) -> Iterable[SampleLike]:
    for family in families:
        if family.name.startswith("vllm:"):
            yield from family.samples


def few(names: Iterable[str], limit: int = 3) -> str:
    ordered = sorted(names)
    shown = ", ".join(ordered[:limit])
    return shown + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def rank_order(value: str) -> tuple[int, int, str]:
    # Numeric ranks in numeric order ("2" before "10"); anything else after them.
    return (0, int(value), value) if value.isdigit() else (1, 0, value)
