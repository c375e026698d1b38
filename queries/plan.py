"""From spec + scope to what a backend needs: real names, endpoints, instances, bucket edges.

Which endpoints a scope covers comes from one selector of the inventory
(`inventory.selectors.scope_endpoints`); backends receive a finished `Plan`, so the
PromQL backend can run it on any thread without a database connection.

DCGM keys read GPUs, which no engine instance or model name selects: on a scope narrowed
to some replicas (instances, a model) they read the exporters holding those replicas' GPUs,
as `inventory.gpus` joins them, with no `model_name` matcher (DCGM series have none); the
plan carries the join (`GpuScope`) so results keep only the scope's GPUs and name the
replica on each GPU's series (`with_gpu_replicas`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from inventory.catalog import CATALOG, MetricType, Resolution, SourceKind, resolve
from inventory.gpus import REPLICA_LABEL, GpuMap, engines_serving, fleet_gpus
from inventory.selectors import ScopedEndpoint, scope_endpoints
from queries.result import QueryResult, ResultSeries, unavailable
from queries.spec import Scope, Spec, Window, spec_by, spec_keys

# Which detected endpoint kind may answer for a catalog entry's source: a router
# reuses engine names (`vllm:num_requests_running`) and must not stand in for one.
ENDPOINT_KIND_FOR_SOURCE: Mapping[SourceKind, str] = {
    "engine": "engine",
    "http": "engine",
    "process": "engine",
    "router": "router",
    "dcgm": "dcgm",
    "gateway": "gateway",
    "prober": "prober",
}


@dataclass(frozen=True)
class NameGroup:
    """The endpoints of a scope that expose a catalog key under one real name."""

    name: str
    endpoint_ids: tuple[int, ...]
    instances: tuple[str, ...]
    fallback: bool  # an older or renamed name, not the catalog's current one


@dataclass(frozen=True)
class ResolvedKey:
    """One catalog key on one scope, resolved endpoint by endpoint: each endpoint reads the
    best name it exposes (so a fleet mid-upgrade is read whole, and an endpoint exposing
    both an old and a new name is read once), grouped by name, preferred name first.

    `missing` lists the endpoints of the key's kind that expose none of its names, with
    why; `buckets` are the finite edges every exposing endpoint has (histograms only).
    """

    key: str
    type: MetricType
    groups: tuple[NameGroup, ...]
    buckets: tuple[float, ...]
    message: str
    fallback: bool
    problems: tuple[str, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()  # (instance, why)
    # Each exposing endpoint's own finite edges, by instance (histograms only).
    edges_by_instance: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The name most of the scope is read under (the first group's)."""
        return self.groups[0].name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(group.name for group in self.groups)

    @property
    def endpoint_ids(self) -> tuple[int, ...]:
        return tuple(i for group in self.groups for i in group.endpoint_ids)

    @property
    def instances(self) -> tuple[str, ...]:
        return tuple(i for group in self.groups for i in group.instances)

    @property
    def candidates(self) -> int:
        """Endpoints of the key's kind in the scope: those read plus those missing it."""
        return len(self.endpoint_ids) + len(self.missing)

    @property
    def coverage_note(self) -> str | None:
        """ "2 of 4 replicas: a:1 exposes ..." when some endpoints of the scope are not read."""
        if not self.missing:
            return None
        why = "; ".join(f"{instance} {reason}" for instance, reason in self.missing)
        return f"{self.key}: {len(self.endpoint_ids)} of {self.candidates} endpoints: {why}"


@dataclass(frozen=True)
class GpuScope:
    """The GPU join a plan of DCGM keys is read with. `keep`: on a narrowed scope, the GPU
    indices of the scope's replicas by exporter instance (None: the whole fleet)."""

    map: GpuMap
    keep: Mapping[str, frozenset[str]] | None = None

    def narrowing(self) -> dict[str, frozenset[str]]:
        """The exporters of the scope that also hold GPUs outside it, and the GPUs to keep."""
        if self.keep is None:
            return {}
        return {e: kept for e, kept in self.keep.items() if kept != self.map.all_gpus(e)}


@dataclass(frozen=True)
class Plan:
    spec: Spec
    window: Window
    model_name: str | None
    keys: Mapping[str, ResolvedKey]
    warnings: tuple[str, ...]
    gpus: GpuScope | None = None  # set when the spec reads a DCGM key

    @property
    def resolved_name(self) -> str:
        return self.keys[spec_keys(self.spec)[0]].name

    @property
    def message(self) -> str:
        return "; ".join(dict.fromkeys(k.message for k in self.keys.values() if k.fallback))


class ScopedInventories(list[ScopedEndpoint]):
    """The inventories of a scope, and each catalog key resolved on them so far: a page's
    specs name the same few keys many times over."""

    def __init__(self, items: Iterable[ScopedEndpoint] = (), *, scope: Scope | None = None) -> None:
        super().__init__(items)
        self.scope = scope
        self._resolved: dict[str, ResolvedKey | QueryResult] = {}
        self._exposed: dict[str, set[str]] = {}
        self._gpus: GpuScope | None = None
        self._exporters: list[ScopedEndpoint] | None = None

    @property
    def narrowed(self) -> bool:
        """Whether the scope is some replicas (instances or a model), not the whole fleet."""
        scope = self.scope
        return scope is not None and (scope.instances is not None or scope.model_name is not None)

    def of_kind(self, kind: str) -> list[ScopedEndpoint]:
        if kind == "dcgm" and self.narrowed:
            return self.exporters()
        return [endpoint for endpoint in self if endpoint.kind == kind]

    def gpu_scope(self) -> GpuScope | None:
        """The fleet's GPU join and, on a narrowed scope, the GPUs of the scope's replicas
        (plus every GPU of an exporter the scope names itself); read once, when a DCGM key
        is planned."""
        if self.scope is None:
            return None
        if self._gpus is None:
            scope = self.scope
            joined = fleet_gpus(scope.fleet)
            if not self.narrowed:
                self._gpus = GpuScope(joined)
            else:
                engines = {e.instance for e in self if e.kind == "engine"}
                if scope.model_name is not None and engines:
                    engines = engines_serving(scope.fleet, scope.model_name, engines)
                keep = joined.gpus_of(engines)
                for endpoint in self._named_exporters():
                    keep[endpoint.instance] = joined.all_gpus(endpoint.instance)
                self._gpus = GpuScope(joined, keep)
        return self._gpus

    def _named_exporters(self) -> list[ScopedEndpoint]:
        """The exporters a scope of instances names itself: read whole."""
        if self.scope is None or self.scope.instances is None:
            return []
        return [e for e in self if e.kind == "dcgm"]

    def exporters(self) -> list[ScopedEndpoint]:
        """The DCGM exporters of a narrowed scope: those it names, and those holding its
        replicas' GPUs."""
        if self._exporters is None:
            gpus = self.gpu_scope()
            named = self._named_exporters()
            wanted = set(gpus.keep or ()) - {e.instance for e in named} if gpus else set()
            joined = []
            if wanted and self.scope is not None:
                found = scope_endpoints(fleet=self.scope.fleet, instances=wanted)
                joined = [e for e in found if e.kind == "dcgm"]
            self._exporters = named + joined
        return self._exporters

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
    return ScopedInventories(
        scope_endpoints(fleet=scope.fleet, instances=scope.instances), scope=scope
    )


def resolve_key(scope: Scope, key: str) -> ResolvedKey | QueryResult:
    """One catalog key resolved on `scope`: the real names per endpoint, the instances read
    and missing, and bucket edges (shared and per instance); `unavailable` when no endpoint
    of the scope exposes it. For SLO forms and rule export, which need names, not values."""
    return scoped_inventories(scope).resolve(key)


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
    if kind == "dcgm" and not candidates and inventories.narrowed:
        joined = inventories.gpu_scope()
        if joined is not None and joined.map.exporters:
            return unavailable("not-joined", f"{key}: {_not_joined(joined.map)}")
    exposed = inventories.exposed(kind)
    overall = resolve(key, exposed)
    if overall.name is None:
        return unavailable(overall.reason or "not-exposed", f"{key}: {overall.message}")
    # Endpoints with the same inventory share one decoded families dict (scope_endpoints
    # decodes each distinct text once), so most endpoints resolve from this memo.
    by_families: dict[int, Resolution] = {}
    members: dict[str, list[ScopedEndpoint]] = {}
    fallback: dict[str, bool] = {}
    missing: list[tuple[str, str]] = []
    edge_sets: list[frozenset[float]] = []
    edges_by_instance: dict[str, tuple[float, ...]] = {}
    problems: list[str] = []
    for endpoint in candidates:
        resolution = by_families.get(id(endpoint.families))
        if resolution is None:
            resolution = by_families[id(endpoint.families)] = resolve(key, endpoint.families.keys())
        family = None
        if resolution.name is not None:
            family = _family_of(resolution.name, entry.type, endpoint.families)
        if not isinstance(family, Mapping) or resolution.name is None:
            missing.append((endpoint.instance, _missing_reason(resolution)))
            continue
        members.setdefault(resolution.name, []).append(endpoint)
        fallback[resolution.name] = resolution.status == "fallback"
        if family.get("buckets"):
            edges = frozenset(float(b) for b in family["buckets"])
            edge_sets.append(edges)
            edges_by_instance[endpoint.instance] = tuple(sorted(edges))
        problems.extend(str(p) for p in family.get("problems") or ())
    preference = {metric.name: i for i, metric in enumerate(entry.names)}
    groups = tuple(
        NameGroup(
            name,
            tuple(e.endpoint_id for e in endpoints),
            tuple(e.instance for e in endpoints),
            fallback[name],
        )
        for name, endpoints in sorted(members.items(), key=lambda m: preference.get(m[0], 99))
    )
    common = frozenset.intersection(*edge_sets) if edge_sets else frozenset()
    return ResolvedKey(
        key=key,
        type=entry.type,
        groups=groups,
        buckets=tuple(sorted(common)),
        message=_message(key, groups, overall),
        fallback=any(group.fallback for group in groups),
        problems=tuple(dict.fromkeys(problems)),
        missing=tuple(missing),
        edges_by_instance=edges_by_instance,
    )


def _not_joined(joined: GpuMap) -> str:
    """Why a narrowed scope reads no GPU though the fleet has exporters."""
    unmatched = joined.unmatched
    text = (
        f"none of the {len(joined.assignments)} GPUs of the fleet's DCGM exporters is joined "
        "to this scope's replicas (by the engine's `gpus` label, pod and namespace, or node)"
    )
    if unmatched:
        first = unmatched[0]
        text += (
            f"; {len(unmatched)} unmatched, e.g. {first.gpu.exporter} GPU {first.gpu.index}: "
            f"{first.why}"
        )
    return text


def _missing_reason(resolution: Resolution) -> str:
    if resolution.name is None:
        return f"exposes no {resolution.key} metric ({resolution.message})"
    return f"exposes no {resolution.key} metric"


def _message(key: str, groups: tuple[NameGroup, ...], overall: Resolution) -> str:
    """What the user is told about the names read: the catalog's word when one name serves
    the whole scope, else which name each part of the scope is read under."""
    if len(groups) == 1:
        return f"{key}: {overall.message}"
    parts = ", ".join(
        f"{group.name} on {len(group.instances)} endpoint{'s' if len(group.instances) > 1 else ''}"
        + (" (older name)" if group.fallback else "")
        for group in groups
    )
    return f"{key}: read under {len(groups)} names, one per endpoint: {parts}"


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
        if resolved.coverage_note is not None:
            warnings.append(resolved.coverage_note)
        warnings.extend(f"{resolved.name}: {p}" for p in resolved.problems)
    model_name = scope.model_name
    gpus = None
    dcgm = [key for key in keys if CATALOG[key].source_kind == "dcgm"]
    if dcgm:
        gpus = inventories.gpu_scope()
        if len(dcgm) == len(keys):
            model_name = None  # DCGM series carry no model_name: the scope's GPUs stand for it
        shared = gpus.narrowing() if gpus is not None else {}
        if shared and not {"instance", "gpu"} <= set(spec_by(spec)):
            exporter = min(shared)
            return unavailable(
                "gpus-shared",
                f"{dcgm[0]}: exporter {exporter} also has GPUs of replicas outside this scope; "
                "only a query by instance and gpu keeps this scope's GPUs apart",
            )
    return Plan(spec, bounded, model_name, keys, tuple(dict.fromkeys(warnings)), gpus)


def with_gpu_replicas(plan: Plan, result: QueryResult) -> QueryResult:
    """A DCGM result with only the scope's GPUs (`GpuScope.keep`), each GPU's series
    labelled with the replica using it (`replica="<pod> (<engine instance>)"`, or
    "unmatched") and ordered by exporter, then GPU index: for results grouped by
    `instance` and `gpu`; other series keep their labels."""
    gpus = plan.gpus
    if gpus is None or not result.series:
        return result
    narrowing = gpus.narrowing()
    series = []
    for one in result.series:
        instance, index = one.labels.get("instance"), one.labels.get("gpu")
        if instance is None or index is None:
            series.append(one)
            continue
        if instance in narrowing and index not in narrowing[instance]:
            continue
        name = gpus.map.replica_name(instance, index)
        if name is not None:
            one = replace(one, labels={**one.labels, REPLICA_LABEL: name})
        series.append(one)
    # Exporter by exporter, GPUs in index order, whichever order a backend answered in.
    series.sort(key=_gpu_order)
    return replace(result, series=tuple(series))


def _gpu_order(series: ResultSeries) -> tuple[str, int, str, list[tuple[str, str]]]:
    index = series.labels.get("gpu", "")
    number = int(index) if index.isdigit() else -1
    return (series.labels.get("instance", ""), number, index, sorted(series.labels.items()))
