"""The blind-spot audit: which alert rules, dashboard panels and autoscaler queries read
metrics this fleet no longer exposes (or exposes on only some replicas), since when, and
the rewrite that would read them again. Read-only: nothing audited is ever changed.

    from blindspots import AuditPaths, audit_fleet
    report, run = audit_fleet(fleet, paths=AuditPaths(rules=(Path("slo-rules.yml"),)))

This is the app's face: other apps import from here only. Its names are loaded on first
use, because Django imports this package before the models are ready.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from blindspots.types import VERDICT_ORDER, Item, ItemError, Verdict

if TYPE_CHECKING:
    from blindspots.audit import ACTIONABLE, AuditReport, ItemResult, audit_items
    from blindspots.services import (
        MAX_SOURCE_BYTES,
        AuditPaths,
        UploadOutcome,
        audit_fleet,
        latest_run,
        new_blind_spots,
        source_delete,
        sources_upload,
    )

__all__ = [
    "ACTIONABLE",
    "MAX_SOURCE_BYTES",
    "VERDICT_ORDER",
    "AuditPaths",
    "AuditReport",
    "Item",
    "ItemError",
    "ItemResult",
    "UploadOutcome",
    "Verdict",
    "audit_fleet",
    "audit_items",
    "latest_run",
    "new_blind_spots",
    "source_delete",
    "sources_upload",
]

LAZY = {
    "ACTIONABLE": "blindspots.audit",
    "AuditReport": "blindspots.audit",
    "ItemResult": "blindspots.audit",
    "audit_items": "blindspots.audit",
    "MAX_SOURCE_BYTES": "blindspots.services",
    "AuditPaths": "blindspots.services",
    "UploadOutcome": "blindspots.services",
    "audit_fleet": "blindspots.services",
    "latest_run": "blindspots.services",
    "new_blind_spots": "blindspots.services",
    "source_delete": "blindspots.services",
    "sources_upload": "blindspots.services",
}


def __getattr__(name: str) -> Any:
    module = LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'blindspots' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
