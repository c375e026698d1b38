"""The models whose changes are recorded, and how each is named and placed in a fleet.

Models are named by label ("slo.Objective") and resolved once the app registry is ready:
the audit app imports no page app (slo, capacity, triage), which import it to read."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inventory.models import Fleet

# A field so named never has its value recorded, only that it changed.
SECRET_NAME = re.compile(r"token|password|secret|credential", re.IGNORECASE)


def own_fleet(instance: Any) -> Fleet | None:
    fleet: Fleet | None = instance.fleet
    return fleet


def no_fleet(instance: Any) -> Fleet | None:
    return None


def itself(instance: Any) -> Fleet | None:
    return instance if isinstance(instance, Fleet) else None


def objective_fleet(instance: Any) -> Fleet | None:
    fleet: Fleet = instance.slo.fleet
    return fleet


def objective_text(instance: Any) -> str:
    # str(objective) says "ttft <= 2.5 s at 0.99": the trail must also say whose.
    return f"{instance.slo} objective {instance.kind}"


@dataclass(frozen=True)
class Tracked:
    model: str  # app label and model name: "slo.Objective"
    object_type: str  # the stable name entries carry: "slo_objective"
    label: str  # what the trail calls it in a sentence: "SLO"
    fleet_of: Callable[[Any], Fleet | None] = own_fleet
    text_of: Callable[[Any], str] = str
    # Fields whose changes are bookkeeping, not configuration.
    skipped: frozenset[str] = frozenset()
    secret: frozenset[str] = frozenset()

    def is_secret(self, field_name: str) -> bool:
        return field_name in self.secret or SECRET_NAME.search(field_name) is not None


TRACKED = (
    Tracked(
        "inventory.Fleet", "fleet", "fleet", fleet_of=itself,
        # The scrape lease moves every cycle: it is the scheduler's lock, not a setting.
        skipped=frozenset({"scrape_lease_until"}),
    ),
    Tracked("inventory.Endpoint", "endpoint", "endpoint"),
    Tracked("inventory.PrometheusSource", "prometheus_source", "Prometheus source"),
    Tracked("slo.Slo", "slo", "SLO"),
    Tracked(
        "slo.Objective", "slo_objective", "SLO",
        fleet_of=objective_fleet, text_of=objective_text,
    ),
    Tracked("capacity.TenantRule", "tenant_rule", "tenant rule"),
    Tracked("capacity.FleetPrice", "fleet_price", "fleet price"),
    Tracked("capacity.CapacityPlan", "capacity_plan", "capacity plan"),
    Tracked("capacity.GpuProfile", "gpu_profile", "GPU profile", fleet_of=no_fleet),
    Tracked("triage.Runbook", "runbook", "runbook", fleet_of=no_fleet),
)  # fmt: skip

LABELS = {spec.object_type: spec.label for spec in TRACKED}
