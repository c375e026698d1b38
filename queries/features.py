"""Features as the capability map sees them: an id, a title and the specs they run.

A panel, an SLO objective or a triage check declares its specs once; `feature_statuses`
asks the planner whether they resolve on a scope (per endpoint kind, on the names the
endpoints really expose), and why not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.capabilities import CapabilityStatus, KeyStatus
from queries.plan import ResolvedKey, ScopedInventories, scoped_inventories
from queries.spec import Scope, Spec, spec_keys


@dataclass(frozen=True)
class Feature:
    id: str
    title: str
    specs: tuple[Spec, ...]


def feature_statuses(
    area: str, features: Iterable[Feature], *, scope: Scope
) -> list[CapabilityStatus]:
    inventories = scoped_inventories(scope)
    return [
        CapabilityStatus(area, feature.id, feature.title, _needs(feature, inventories))
        for feature in features
    ]


def _needs(feature: Feature, inventories: ScopedInventories) -> tuple[KeyStatus, ...]:
    keys = dict.fromkeys(key for spec in feature.specs for key in spec_keys(spec))
    statuses = []
    for key in keys:
        resolved = inventories.resolve(key)
        if isinstance(resolved, ResolvedKey):
            statuses.append(
                KeyStatus(
                    key,
                    resolved.name,
                    resolved.fallback,
                    resolved.message,
                    resolved.coverage_note or "",
                )
            )
        else:
            statuses.append(KeyStatus(key, None, False, resolved.message))
    return tuple(statuses)
