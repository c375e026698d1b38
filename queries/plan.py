"""From spec + scope to what a backend needs: real names, endpoints, instances, bucket edges.

Which endpoints a scope covers comes from one selector of the inventory
(`inventory.selectors.scope_endpoints`); backends receive a finished `Plan`, so the
PromQL backend can run it on any thread without a database connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from inventory.catalog import CATALOG, MetricType, SourceKind, resolve
from inventory.selectors import ScopedEndpoint, scope_endpoints
from queries.result import QueryResult, unavailable
from queries.spec import Scope, Spec, Window, spec_keys

# Which detected endpoint kind may answer for a catalog entry's source: a router
# reuses engine names (`vllm:num_requests_running`) and must not stand in for one.
ENDPOINT_KIND_FOR_SOURCE: Mapping[SourceKind, str] = {
    "engine": "engine",
    "http": "engine",
    "process": "engine",
    "router": "router",
    "dcgm": "dcgm",
}


@dataclass(frozen=True)
class ResolvedKey:
    """One catalog key on one scope: the name to read and the endpoints that expose it."""

    key: str
    name: str
    type: MetricType
    endpoint_ids: tuple[int, ...]
    instances: tuple[str, ...]
    # Finite bucket edges every exposing endpoint has (histograms only).
    buckets: tuple[float, ...]
    message: str
    fallback: bool
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    spec: Spec
    window: Window
    model_name: str | None
    keys: Mapping[str, ResolvedKey]
    warnings: tuple[str, ...]

    @property
    def resolved_name(self) -> str:
        return self.keys[spec_keys(self.spec)[0]].name

    @property
    def message(self) -> str:
        return "; ".join(dict.fromkeys(k.message for k in self.keys.values() if k.fallback))


class ScopedInventories(list[ScopedEndpoint]):
    """The inventories of a scope, and each catalog key resolved on them so far: a page's
    specs name the same few keys many times over."""

    def __init__(self, items: Iterable[ScopedEndpoint] = ()) -> None:
        super().__init__(items)
        self._resolved: dict[str, ResolvedKey | QueryResult] = {}
        self._exposed: dict[str, set[str]] = {}

    def of_kind(self, kind: str) -> list[ScopedEndpoint]:
        return [endpoint for endpoint in self if endpoint.kind == kind]

    def exposed(self, kind: str) -> set[str]:
        """The family names the endpoints of `kind` expose, together."""
        found = self._exposed.get(kind)
        if found is None:
            found = self._exposed[kind] = {n for e in self.of_kind(kind) for n in e.families}
        return found

    def resolve(self, key: str) -> ResolvedKey | QueryResult:
        found = self._resolved.get(key)
        if found is None:
            found = self._resolved[key] = _resolve_key(key, self)
        return found


def scoped_inventories(scope: Scope) -> ScopedInventories:
    """The enabled endpoints of the scope that have an inventory, with what planning reads."""
    return ScopedInventories(scope_endpoints(fleet=scope.fleet, instances=scope.instances))


def _family_of(name: str, type: MetricType, families: Mapping[str, object]) -> object | None:
    """The inventory's family entry for wire name `name` (counters are stored without _total)."""
    for spelling in (name, name.removesuffix("_total") if type == "counter" else name):
        if spelling in families:
            return families[spelling]
    return None


def _resolve_key(key: str, inventories: ScopedInventories) -> ResolvedKey | QueryResult:
    entry = CATALOG[key]
    kind = ENDPOINT_KIND_FOR_SOURCE[entry.source_kind]
    candidates = inventories.of_kind(kind)
    exposed = inventories.exposed(kind)
    resolution = resolve(key, exposed)
    if resolution.name is None:
        return unavailable(resolution.reason or "not-exposed", f"{key}: {resolution.message}")
    ids: list[int] = []
    instances: list[str] = []
    edge_sets: list[frozenset[float]] = []
    problems: list[str] = []
    for endpoint in candidates:
        family = _family_of(resolution.name, entry.type, endpoint.families)
        if not isinstance(family, Mapping):
            continue
        ids.append(endpoint.endpoint_id)
        instances.append(endpoint.instance)
        if family.get("buckets"):
            edge_sets.append(frozenset(float(b) for b in family["buckets"]))
        problems.extend(str(p) for p in family.get("problems") or ())
    common = frozenset.intersection(*edge_sets) if edge_sets else frozenset()
    return ResolvedKey(
        key=key,
        name=resolution.name,
        type=entry.type,
        endpoint_ids=tuple(ids),
        instances=tuple(instances),
        buckets=tuple(sorted(common)),
        message=f"{key}: {resolution.message}",
        fallback=resolution.status == "fallback",
        problems=tuple(dict.fromkeys(problems)),
    )


def plan_query(
    spec: Spec,
    *,
    scope: Scope,
    window: Window,
    inventories: ScopedInventories | None = None,
) -> Plan | QueryResult:
    """Resolve every key of `spec` on `scope`; the first unavailable key decides the result.

    Pass `inventories` (`scoped_inventories(scope)`) when planning many specs at once:
    decoding every endpoint's inventory once per spec costs more than evaluating them.
    """
    if inventories is None:
        inventories = scoped_inventories(scope)
    bounded = window.bounded()
    warnings: list[str] = []
    if bounded is not window:
        warnings.append(
            f"step widened from {window.step_seconds:g}s to {bounded.step_seconds:g}s "
            f"to stay within {bounded.points} points per series"
        )
    keys: dict[str, ResolvedKey] = {}
    for key in spec_keys(spec):
        if key in keys:
            continue
        resolved = inventories.resolve(key)
        if isinstance(resolved, QueryResult):
            return resolved
        keys[key] = resolved
        if resolved.fallback:
            warnings.append(resolved.message)
        warnings.extend(f"{resolved.name}: {p}" for p in resolved.problems)
    return Plan(spec, bounded, scope.model_name, keys, tuple(dict.fromkeys(warnings)))
