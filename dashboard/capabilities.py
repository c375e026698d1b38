"""The panels as features of the capability map: each panel's own specs, nothing restated."""

from __future__ import annotations

from collections.abc import Sequence

from dashboard.panels import PANELS
from inventory.capabilities import CapabilityStatus
from inventory.models import Fleet
from queries import Feature, Scope, feature_statuses

PANEL_FEATURES: tuple[Feature, ...] = tuple(
    Feature(panel.id, panel.title, tuple(panel.traces.values())) for panel in PANELS
)


def panel_capabilities(fleet: Fleet) -> Sequence[CapabilityStatus]:
    return feature_statuses("panel", PANEL_FEATURES, scope=Scope(fleet))
