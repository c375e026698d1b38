"""SLO objectives as features of the capability map: which objectives this fleet can
measure, on which real metric names, or why not (the same specs the evaluation reads)."""

from __future__ import annotations

from collections.abc import Sequence

from inventory.capabilities import CapabilityStatus
from inventory.models import Fleet
from queries import Feature, Increase, Scope, feature_statuses
from slo.objectives import OBJECTIVE_KINDS

OBJECTIVE_FEATURES: tuple[Feature, ...] = tuple(
    Feature(
        f"slo.{info.kind}",
        f"SLO objective: {info.label}",
        (Increase(info.key, by=("finished_reason" if info.kind == "success" else "le",)),),
    )
    for info in OBJECTIVE_KINDS.values()
)


def objective_capabilities(fleet: Fleet) -> Sequence[CapabilityStatus]:
    return feature_statuses("slo", OBJECTIVE_FEATURES, scope=Scope(fleet))
