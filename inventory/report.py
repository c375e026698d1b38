"""The inventory page's data for one fleet: matrix, findings, capability map, scrape health."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from inventory.capabilities import CapabilityStatus, capability_map
from inventory.catalog import entry_for_name, replacement_for
from inventory.drift import EndpointSnapshot, Finding, fleet_findings
from inventory.models import Fleet
from inventory.selectors import endpoint_snapshots


@dataclass(frozen=True)
class MatrixRow:
    family: str
    category: str
    catalog_key: str
    cells: tuple[str, ...]  # one per endpoint: "" when absent, else "type · series"


@dataclass(frozen=True)
class KindMatrix:
    """Families x endpoints for one kind of endpoint: absent means absent among peers."""

    kind: str
    endpoints: tuple[EndpointSnapshot, ...]
    rows: tuple[MatrixRow, ...]


@dataclass(frozen=True)
class InventoryReport:
    endpoints: tuple[EndpointSnapshot, ...]
    matrices: tuple[KindMatrix, ...]
    findings: tuple[Finding, ...]
    capabilities: tuple[CapabilityStatus, ...]


def deprecated_replacement(name: str) -> str | None:
    """What to use instead of `name` when it is a renamed or removed vLLM name, else None."""
    successor = replacement_for(name)
    if successor is not None:
        return successor
    item = entry_for_name(name, source_kind="engine")
    if item is not None and item.current is None:
        return "nothing: it is gone from current vLLM"
    return None


def _matrix(kind: str, snapshots: list[EndpointSnapshot]) -> KindMatrix:
    families = sorted({name for s in snapshots for name in (s.families or {})})
    rows = []
    for name in families:
        item = entry_for_name(name)
        cells = []
        for snap in snapshots:
            family = (snap.families or {}).get(name)
            cells.append("" if family is None else f"{family['type']} · {family['series']}")
        rows.append(
            MatrixRow(
                family=name,
                category=item.category if item else "unknown",
                catalog_key=item.key if item else "",
                cells=tuple(cells),
            )
        )
    rows.sort(key=lambda r: (r.category, r.family))
    return KindMatrix(kind, tuple(snapshots), tuple(rows))


def fleet_inventory_report(
    *, fleet: Fleet, now: datetime, interval_seconds: float
) -> InventoryReport:
    snapshots = endpoint_snapshots(fleet=fleet)
    by_kind: dict[str, list[EndpointSnapshot]] = {}
    for snap in snapshots:
        if snap.families is not None:
            by_kind.setdefault(snap.kind, []).append(snap)
    findings = fleet_findings(
        snapshots, now=now, interval_seconds=interval_seconds, deprecated=deprecated_replacement
    )
    return InventoryReport(
        endpoints=tuple(snapshots),
        matrices=tuple(_matrix(kind, group) for kind, group in sorted(by_kind.items())),
        findings=tuple(findings),
        capabilities=tuple(capability_map(fleet=fleet)),
    )
