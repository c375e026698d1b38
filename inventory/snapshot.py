"""What one endpoint exposes, as a small picklable record built right after a scrape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from inventory.catalog import detect_endpoint
from inventory.exposition import Family
from inventory.summary import FamilySummary, summarize_families


@dataclass(frozen=True)
class InventorySnapshot:
    families: dict[str, FamilySummary]
    dialect: str
    kind: str
    engines: tuple[str, ...]
    evidence: tuple[str, ...]


def inventory_snapshot(families: Sequence[Family]) -> InventorySnapshot:
    profile = detect_endpoint(families)
    return InventorySnapshot(
        families=summarize_families(families),
        dialect=str(profile.dialect),
        kind=str(profile.kind),
        engines=tuple(profile.engines),
        evidence=tuple(profile.evidence),
    )
