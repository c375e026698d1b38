"""The shape of a catalog entry, and the one constructor the catalog data modules share.

Kept apart from `inventory.catalog.index` so the data modules (`engine`,
`connectors`, `frontend`, `platform`, `gaps`)
can build entries without importing the registry that collects them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MetricType = Literal["counter", "gauge", "histogram", "summary", "info"]
Category = Literal["traffic", "queue", "latency", "engine", "platform", "quality"]
# "http" is vLLM's API-server layer (instrumentator and websocket families),
# "process" the prometheus_client defaults every Python exporter carries.
# "prober" is FleetScope's golden-set prober (fleetsim/README.md).
SourceKind = Literal["engine", "http", "process", "router", "dcgm", "gateway", "prober"]
Unit = Literal[
    "seconds",
    "milliseconds",
    "tokens",
    "tokens_per_second",
    "ratio",
    "percent",
    "bytes",
    "bytes_per_second",
    "MiB",
    "watts",
    "MHz",
    "celsius",
    "millijoules",
    "flops",
    "requests",
    "requests_per_second",
    "events",
    "items",
    "blocks",
    "connections",
    "timestamp",
    "none",
]

ENGINE_LABELS: tuple[str, ...] = ("model_name", "engine")
# The 0.8 deprecations were all deleted by one cleanup; V0 servers emitted them until then.
V0_CLEANUP = "2025-05-28"
V0_ONLY = "V0 only; deprecated in 0.8"


@dataclass(frozen=True, slots=True)
class MetricName:
    """One exposition name a metric has had, with when and how it changed.

    `name` is the name on the wire: counters carry `_total`, histograms and
    summaries are listed by base name. `since`/`until` are merge dates or
    versions as the reference gives them; a name with `until` set is gone from
    current vLLM. `change` is a short phrase for UI messages ("renamed in
    0.11"); `note` is a semantic caveat to show next to data read under it.
    """

    name: str
    since: str | None = None
    until: str | None = None
    change: str = ""
    note: str = ""

    @property
    def is_current(self) -> bool:
        return self.until is None


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A known metric under a stable key, with every name it has been exposed as.

    `names` is in preference order, current name first. An entry whose names
    all have `until` set describes something current vLLM no longer emits. An
    entry with `gap` set has no names: it records a number a triage dashboard
    wants that vLLM does not expose, and `derivation` says how to approximate it.
    `requires` names the flag or setting without which the family is absent.
    `confusable` lists names that look like a substitute but mean something else.
    """

    key: str
    names: tuple[MetricName, ...]
    type: MetricType
    unit: Unit
    category: Category
    meaning: str
    labels: tuple[str, ...]
    source_kind: SourceKind
    requires: str = ""
    gap: str = ""
    derivation: str = ""
    confusable: tuple[MetricName, ...] = ()

    @property
    def current(self) -> MetricName | None:
        """The name current vLLM uses, or None if the metric was removed or never existed."""
        if self.names and self.names[0].is_current:
            return self.names[0]
        return None

    @property
    def wire_type(self) -> str:
        """The TYPE line's word: info-like metrics are plain gauges on the wire."""
        return "gauge" if self.type == "info" else self.type


def entry(
    key: str,
    *names: MetricName | str,
    source_kind: SourceKind,
    type: MetricType,
    unit: Unit,
    category: Category,
    meaning: str,
    labels: tuple[str, ...] = (),
    requires: str = "",
    gap: str = "",
    derivation: str = "",
    confusable: tuple[MetricName, ...] = (),
) -> CatalogEntry:
    """Build an entry; a bare string stands for a current name with no history."""
    return CatalogEntry(
        key=key,
        names=tuple(n if isinstance(n, MetricName) else MetricName(n) for n in names),
        type=type,
        unit=unit,
        category=category,
        meaning=meaning,
        labels=labels,
        source_kind=source_kind,
        requires=requires,
        gap=gap,
        derivation=derivation,
        confusable=confusable,
    )


def engine_entry(
    key: str,
    *names: MetricName | str,
    type: MetricType,
    unit: Unit,
    category: Category,
    meaning: str,
    extra: tuple[str, ...] = (),
    labels: tuple[str, ...] | None = None,
    requires: str = "",
    derivation: str = "",
    confusable: tuple[MetricName, ...] = (),
) -> CatalogEntry:
    """An engine entry: labels default to `model_name, engine` plus `extra`."""
    return entry(
        key,
        *names,
        source_kind="engine",
        type=type,
        unit=unit,
        category=category,
        meaning=meaning,
        labels=ENGINE_LABELS + extra if labels is None else labels,
        requires=requires,
        derivation=derivation,
        confusable=confusable,
    )


def v0_name(
    name: str, until: str = V0_CLEANUP, change: str = V0_ONLY, note: str = ""
) -> MetricName:
    """A name only V0 servers emitted, gone with the 2025-05-28 cleanup unless `until` says."""
    return MetricName(name, since="V0", until=until, change=change, note=note)
