"""The registry of known metrics: stable keys, every name each has had, and name resolution.

    entry = CATALOG["itl"]
    resolution = resolve("itl", exposed_names)   # which real name to query, and why

Names are exposition (wire) names: counters end in `_total`, histograms and
summaries are listed by base name. Lookups also accept the parser's family
names, which drop a counter's `_total` (`vllm:prompt_tokens`), so callers can
pass either. `vllm:iteration_tokens_total` is a histogram and keeps its name.

The data lives in the other modules of this package, one per source; this module
only indexes it. Nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from inventory.catalog import connectors as catalog_connectors
from inventory.catalog import engine as catalog_engine
from inventory.catalog import frontend as catalog_frontend
from inventory.catalog import gaps as catalog_gaps
from inventory.catalog import gateway as catalog_gateway
from inventory.catalog import platform as catalog_platform
from inventory.catalog import prober as catalog_prober
from inventory.catalog import removed as catalog_removed
from inventory.catalog.model import (
    ENGINE_LABELS,
    CatalogEntry,
    Category,
    MetricName,
    MetricType,
    SourceKind,
    Unit,
)

__all__ = [
    "CATALOG",
    "ENGINE_LABELS",
    "ENGINE_ONLY_NAMES",
    "RENAMED_PAIRS",
    "ROUTER_ONLY_NAMES",
    "V0_NAMES",
    "CatalogEntry",
    "Category",
    "MetricName",
    "MetricType",
    "Resolution",
    "SourceKind",
    "Unit",
    "entries_for_name",
    "entry_for_name",
    "name_variants",
    "replacement_for",
    "resolve",
    "resolve_all",
]

Status = Literal["current", "fallback", "unavailable"]
UnavailableReason = Literal["not-exposed", "flag-gated", "removed", "not-in-vllm"]

_ALL: tuple[CatalogEntry, ...] = (
    catalog_engine.ENTRIES
    + catalog_removed.ENTRIES
    + catalog_connectors.ENTRIES
    + catalog_frontend.ENTRIES
    + catalog_platform.ENTRIES
    + catalog_gaps.ENTRIES
    + catalog_gateway.ENTRIES
    + catalog_prober.ENTRIES
)


def _build(entries: tuple[CatalogEntry, ...]) -> Mapping[str, CatalogEntry]:
    by_key: dict[str, CatalogEntry] = {}
    for item in entries:
        if item.key in by_key:
            raise ValueError(f"duplicate catalog key {item.key!r}")
        by_key[item.key] = item
    return MappingProxyType(by_key)


CATALOG: Mapping[str, CatalogEntry] = _build(_ALL)

_SOURCE_HINT: Mapping[SourceKind, str] = {
    "dcgm": "needs a dcgm-exporter scrape",
    "router": "needs a production-stack router scrape",
    "gateway": "needs a scrape of a gateway exporting FleetScope's gateway metrics",
    "prober": "needs a scrape of FleetScope's golden-set prober",
    "process": "needs a single-process API server",
    "http": "",
    "engine": "",
}


def name_variants(name: str, type: MetricType) -> frozenset[str]:
    """The spellings under which a catalog name may show up: wire name and family name."""
    if type != "counter":
        return frozenset({name})
    if name.endswith("_total"):
        return frozenset({name, name.removesuffix("_total")})
    # A bare counter name: prometheus_client would add `_total` on the wire, Go exporters
    # such as dcgm-exporter do not, so accept both.
    return frozenset({name, name + "_total"})


def _index(entries: tuple[CatalogEntry, ...]) -> Mapping[str, tuple[CatalogEntry, ...]]:
    found: dict[str, list[CatalogEntry]] = {}
    for item in entries:
        for metric in item.names:
            for spelling in name_variants(metric.name, item.type):
                bucket = found.setdefault(spelling, [])
                if item not in bucket:
                    bucket.append(item)
    return MappingProxyType({name: tuple(items) for name, items in found.items()})


_BY_NAME = _index(_ALL)


def _vllm_names_only_of(kinds: frozenset[SourceKind]) -> frozenset[str]:
    """vllm: spellings whose every catalog entry is of one of `kinds`."""
    spellings = {s for s in _BY_NAME if s.startswith("vllm:")}
    return frozenset(s for s in spellings if all(e.source_kind in kinds for e in _BY_NAME[s]))


# The API server's vllm: families (websocket, tool parser) also mark a vLLM engine endpoint.
ENGINE_ONLY_NAMES = _vllm_names_only_of(frozenset({"engine", "http"}))
ROUTER_ONLY_NAMES = _vllm_names_only_of(frozenset({"router"}))
V0_NAMES = frozenset(
    m.name for item in _ALL if item.source_kind == "engine" for m in item.names if m.since == "V0"
)
# (old, new) wire names of the 0.9.2 and 0.11 renames; V0 duplicates are in V0_NAMES instead.
RENAMED_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (m.name, item.names[0].name)
    for item in _ALL
    if item.source_kind == "engine" and item.current is not None
    for m in item.names[1:]
    if m.until is not None and m.since != "V0"
)


def entries_for_name(name: str) -> tuple[CatalogEntry, ...]:
    """Every entry that has used `name` (engine entries first, then by catalog order).

    More than one comes back when the router reuses an engine name
    (`vllm:num_requests_running`) or one deprecated name feeds two entries.
    """
    return _BY_NAME.get(name, ())


def replacement_for(name: str, *, source_kind: SourceKind = "engine") -> str | None:
    """The current name(s) to use instead of an old `name`.

    None when `name` is current, unknown, or was dropped without a successor
    (`vllm:num_requests_swapped`). A deprecated name that fed two entries
    (`vllm:kv_offload_total_bytes_total`) gives both successors, joined by " / ".
    """
    successors: list[str] = []
    for item in entries_for_name(name):
        if item.source_kind != source_kind or item.current is None:
            continue
        if name in name_variants(item.current.name, item.type):
            return None
        if item.current.name not in successors:
            successors.append(item.current.name)
    return " / ".join(successors) or None


def entry_for_name(name: str, *, source_kind: SourceKind | None = None) -> CatalogEntry | None:
    """The entry `name` belongs to, or None if the catalog does not know it.

    Without `source_kind` a clashing `vllm:` name means the engine's metric;
    pass `source_kind="router"` for a series scraped from a router.
    """
    for item in entries_for_name(name):
        if source_kind is None or item.source_kind == source_kind:
            return item
    return None


@dataclass(frozen=True, slots=True)
class Resolution:
    """Which real name to query for a key on a given fleet, and what to tell the user.

    `name` is the catalog's wire name (usable in PromQL), None when unavailable.
    `status` is "current" for the preferred current name, "fallback" for any
    other name (renamed, deprecated, or one that only old servers emit), and
    "unavailable" when nothing usable is exposed; `reason` then says why.
    `caveat` carries the semantic note of the chosen name (e.g. the prefix
    counters' block-vs-token unit change).
    """

    key: str
    status: Status
    name: str | None
    message: str
    reason: UnavailableReason | None = None
    caveat: str = ""

    @property
    def available(self) -> bool:
        return self.status != "unavailable"


def resolve(key: str, exposed_names: Set[str]) -> Resolution:
    """Pick the best exposed name for `key`; raise KeyError for a key the catalog lacks.

    `exposed_names` may hold wire names or parser family names. For keys whose
    names the router reuses, pass names from engine endpoints only (see
    `inventory.catalog.dialects.detect_kind`), or a router's stat will stand in.
    """
    item = CATALOG[key]
    if item.gap:
        return _unavailable(item, "not-in-vllm", _gap_message(item))
    for metric in item.names:
        if name_variants(metric.name, item.type) & exposed_names:
            return _found(item, metric)
    if item.names and item.current is None:
        return _unavailable(item, "removed", _removed_message(item, exposed_names))
    if item.requires:
        message = f"flag-gated: needs {item.requires}"
        return _unavailable(item, "flag-gated", message + _confusable_hint(item, exposed_names))
    return _unavailable(item, "not-exposed", _not_exposed_message(item, exposed_names))


def resolve_all(exposed_names: Set[str]) -> Mapping[str, Resolution]:
    """`resolve` for every catalog key, in catalog order."""
    return MappingProxyType({key: resolve(key, exposed_names) for key in CATALOG})


def _found(item: CatalogEntry, metric: MetricName) -> Resolution:
    preferred = item.names[0]
    if metric is preferred and metric.is_current:
        return Resolution(
            item.key, "current", metric.name, f"uses {metric.name}", None, metric.note
        )
    change = f" ({metric.change})" if metric.change else ""
    if metric is preferred:
        message = f"{metric.name}{change} is gone from current vLLM; this fleet still exposes it"
    else:
        message = (
            f"needs {preferred.name}; this fleet exposes {metric.name}{change}: "
            "showing that instead"
        )
    return Resolution(item.key, "fallback", metric.name, message, None, metric.note)


def _unavailable(item: CatalogEntry, reason: UnavailableReason, message: str) -> Resolution:
    return Resolution(item.key, "unavailable", None, message, reason)


def _gap_message(item: CatalogEntry) -> str:
    derive = f"; derive it as {item.derivation}" if item.derivation else ""
    return f"vLLM does not expose this: {item.gap}{derive}"


def _removed_message(item: CatalogEntry, exposed: Set[str]) -> str:
    last = item.names[0]
    change = f", {last.change}" if last.change else ""
    message = f"no longer exposed: {last.name} was removed ({last.until}{change})"
    if last.note:
        message += f"; {last.note}"
    if item.derivation:
        message += f"; derive it as {item.derivation}"
    return message + _confusable_hint(item, exposed)


def _not_exposed_message(item: CatalogEntry, exposed: Set[str]) -> str:
    message = "not exposed by any endpoint"
    hint = _SOURCE_HINT[item.source_kind]
    since = item.names[0].since if item.names else None
    if hint:
        message += f" ({hint})"
    elif since and since[:2] == "20":
        # A dated addition: older servers simply predate it, which is worth saying.
        message += f"; {item.names[0].name} exists only since {since}, so older vLLM lacks it"
    return message + _confusable_hint(item, exposed)


def _confusable_hint(item: CatalogEntry, exposed: Set[str]) -> str:
    for other in item.confusable:
        spellings = {other.name, other.name + "_total", other.name.removesuffix("_total")}
        if spellings & exposed:
            return f"; {other.name} is exposed but is no substitute: {other.note}"
    return ""
