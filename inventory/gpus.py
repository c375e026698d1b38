"""Which GPUs serve which vLLM replica: each DCGM exporter's GPUs joined to engine endpoints.

vLLM exports no GPU UUID or host name (reference section 9.2), so a GPU is tied to the
replica using it by labels the deployment carries. GPU by GPU, the first rule that names
exactly one engine endpoint decides:

1. **explicit** — the engine endpoint's `gpus` label, set at registration (a file_sd
   target label, or the endpoint's labels), lists the GPUs it uses as
   `<exporter instance>/<gpu index>,<gpu index>`, exporters separated by `;`:
   `gpus="10.0.0.5:9400/0,1;10.0.0.6:9400/0"`. An exporter without `/...` means all of
   its GPUs. It wins over everything below: use it where the labels are missing or wrong.
2. **pod** — the GPU's DCGM series carry Kubernetes pod mapping labels `pod` and
   `namespace` (older exporters: `pod_name`, `pod_namespace`) equal to the engine
   endpoint's `pod` and `namespace` labels (Kubernetes service discovery relabelled to
   those names).
3. **node** — the GPU's `Hostname` (`hostname` on dcgm-exporter main since 2026-05)
   equals the engine endpoint's `node` label, exactly one engine endpoint runs on that
   node, and the exporter has no pod mapping at all (with pod mapping on, a GPU without a
   pod is one no pod uses, not the node's replica's).

A GPU that no rule ties to exactly one replica (two endpoints claim it, its series name
two pods, its node runs several replicas, nothing matches) is listed as unmatched with
why: never guessed. A GPU is the exporter's instance and DCGM's `gpu` index, read from
the exporter's latest series layout.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the join itself (gpu_join) needs no Django
    from inventory.models import Fleet

EXPLICIT_LABEL = "gpus"
# (pod, namespace) label names on DCGM series: the current ones, then the old flag's.
POD_LABELS = (("pod", "namespace"), ("pod_name", "pod_namespace"))
HOST_LABELS = ("Hostname", "hostname")
ENGINE_KINDS = frozenset({"engine", "vllm"})
DCGM_KINDS = frozenset({"dcgm"})
# The label a GPU series of a query result gets: the replica using that GPU.
REPLICA_LABEL = "replica"
UNMATCHED = "unmatched"

Rule = Literal["explicit", "pod", "node"]


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU as its exporter's series describe it."""

    exporter: str  # the exporter's instance (host:port)
    index: str  # DCGM's `gpu` label
    uuid: str = ""
    hostname: str = ""
    pods: tuple[tuple[str, str], ...] = ()  # (namespace, pod) its series name, sorted


@dataclass(frozen=True, slots=True)
class Engine:
    """An engine endpoint (one vLLM replica) and its registration labels."""

    instance: str
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """How a legend names the replica: its pod and instance, or its instance."""
        pod = self.labels.get("pod")
        return f"{pod} ({self.instance})" if pod else self.instance


@dataclass(frozen=True, slots=True)
class Assignment:
    gpu: Gpu
    replica: str | None  # the engine endpoint's instance; None: unmatched
    rule: Rule | None
    why: str = ""  # for an unmatched GPU: why no rule decided


@dataclass(frozen=True)
class GpuMap:
    """Every GPU of a fleet's exporters and the replica using it, or why none is known."""

    assignments: tuple[Assignment, ...]
    engines: Mapping[str, Engine]  # by instance
    problems: tuple[str, ...] = ()  # malformed `gpus` labels, GPUs they name that no one has
    _by_gpu: Mapping[tuple[str, str], Assignment] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        by_gpu = {(a.gpu.exporter, a.gpu.index): a for a in self.assignments}
        object.__setattr__(self, "_by_gpu", by_gpu)

    def assignment(self, exporter: str, index: str) -> Assignment | None:
        return self._by_gpu.get((exporter, index))

    @property
    def unmatched(self) -> tuple[Assignment, ...]:
        return tuple(a for a in self.assignments if a.replica is None)

    @property
    def exporters(self) -> frozenset[str]:
        return frozenset(a.gpu.exporter for a in self.assignments)

    def gpus_of(self, replicas: Collection[str]) -> dict[str, frozenset[str]]:
        """The GPUs of these replicas (engine instances): gpu indices by exporter."""
        found: dict[str, set[str]] = {}
        for a in self.assignments:
            if a.replica is not None and a.replica in replicas:
                found.setdefault(a.gpu.exporter, set()).add(a.gpu.index)
        return {exporter: frozenset(indices) for exporter, indices in found.items()}

    def all_gpus(self, exporter: str) -> frozenset[str]:
        return frozenset(a.gpu.index for a in self.assignments if a.gpu.exporter == exporter)

    def replica_name(self, exporter: str, index: str) -> str | None:
        """What the `replica` label of this GPU's series says; None for a GPU not seen."""
        found = self.assignment(exporter, index)
        if found is None:
            return None
        if found.replica is None:
            return UNMATCHED
        return self.engines[found.replica].name


def parse_explicit(value: str) -> dict[str, frozenset[str] | None]:
    """`gpus` label text: GPU indices by exporter instance (None: all its GPUs).
    Raises ValueError on text that is not `<instance>[/<index>,...]` parts split by `;`."""
    found: dict[str, frozenset[str] | None] = {}
    for part in (p.strip() for p in value.split(";")):
        if not part:
            continue
        exporter, slash, indices = part.partition("/")
        exporter = exporter.strip()
        if not exporter or any(c.isspace() for c in exporter):
            raise ValueError(f"{part!r} names no exporter instance")
        if not slash:
            found[exporter] = None
            continue
        wanted = {i.strip() for i in indices.split(",")}
        if not wanted or not all(i.isdigit() for i in wanted):
            raise ValueError(f"{part!r}: GPU indices are numbers separated by commas")
        if exporter not in found or found[exporter] is not None:  # None: all, already
            found[exporter] = (found.get(exporter) or frozenset()) | frozenset(wanted)
    return found


def gpus_from_series(exporter: str, series: Iterable[Mapping[str, str]]) -> list[Gpu]:
    """The GPUs an exporter's series describe (series without a `gpu` label are not a
    GPU's: NvSwitch, CPU), each with the pods its series name."""
    uuids: dict[str, str] = {}
    hosts: dict[str, str] = {}
    pods: dict[str, set[tuple[str, str]]] = {}
    for labels in series:
        index = labels.get("gpu")
        if not index:
            continue
        pods.setdefault(index, set())
        if not uuids.get(index):
            uuids[index] = labels.get("UUID") or labels.get("uuid") or ""
        if not hosts.get(index):
            hosts[index] = next((labels[h] for h in HOST_LABELS if labels.get(h)), "")
        for pod_label, namespace_label in POD_LABELS:
            if labels.get(pod_label):
                pods[index].add((labels.get(namespace_label, ""), labels[pod_label]))
                break
    return [
        Gpu(exporter, index, uuids[index], hosts[index], tuple(sorted(pods[index])))
        for index in sorted(pods, key=_index_order)
    ]


def _index_order(index: str) -> tuple[int, str]:
    return (int(index), index) if index.isdigit() else (1 << 30, index)


def gpu_join(engines: Sequence[Engine], gpus: Sequence[Gpu]) -> GpuMap:
    """Tie each GPU to the engine using it, by the rules of this module's docstring."""
    problems: list[str] = []
    known = {(g.exporter, g.index) for g in gpus}
    exporters = {g.exporter for g in gpus}
    claims: dict[tuple[str, str], list[str]] = {}
    for engine in engines:
        text = engine.labels.get(EXPLICIT_LABEL)
        if text is None:
            continue
        try:
            wanted = parse_explicit(text)
        except ValueError as exc:
            problems.append(f"{engine.instance}: label {EXPLICIT_LABEL}={text!r}: {exc}")
            continue
        for exporter, indices in wanted.items():
            if exporter not in exporters:
                problems.append(
                    f"{engine.instance}: label {EXPLICIT_LABEL} names {exporter}, "
                    "which is no DCGM exporter of this fleet with GPUs"
                )
                continue
            for index in sorted(indices) if indices is not None else ():
                if (exporter, index) not in known:
                    problems.append(
                        f"{engine.instance}: label {EXPLICIT_LABEL} names GPU {index} of "
                        f"{exporter}, which its series do not show"
                    )
            for gpu in gpus:
                if gpu.exporter == exporter and (indices is None or gpu.index in indices):
                    claims.setdefault((exporter, gpu.index), []).append(engine.instance)
    by_pod: dict[tuple[str, str], list[str]] = {}
    by_node: dict[str, list[str]] = {}
    for engine in engines:
        pod, namespace = engine.labels.get("pod"), engine.labels.get("namespace")
        if pod and namespace:
            by_pod.setdefault((namespace, pod), []).append(engine.instance)
        if node := engine.labels.get("node"):
            by_node.setdefault(node, []).append(engine.instance)
    pod_mapped = {g.exporter for g in gpus if g.pods}
    assignments = []
    for gpu in gpus:
        assignments.append(_assign(gpu, claims, by_pod, by_node, gpu.exporter in pod_mapped))
    return GpuMap(
        tuple(assignments), {e.instance: e for e in engines}, tuple(dict.fromkeys(problems))
    )


def _assign(
    gpu: Gpu,
    claims: Mapping[tuple[str, str], list[str]],
    by_pod: Mapping[tuple[str, str], list[str]],
    by_node: Mapping[str, list[str]],
    pod_mapped: bool,
) -> Assignment:
    claimed = claims.get((gpu.exporter, gpu.index), [])
    if len(claimed) == 1:
        return Assignment(gpu, claimed[0], "explicit")
    if claimed:
        return Assignment(gpu, None, None, f"claimed by {', '.join(claimed)} ({EXPLICIT_LABEL})")
    if len(gpu.pods) > 1:
        pods = ", ".join(f"{ns}/{pod}" for ns, pod in gpu.pods)
        return Assignment(gpu, None, None, f"its series name several pods: {pods}")
    if gpu.pods:
        namespace, pod = gpu.pods[0]
        users = by_pod.get((namespace, pod), [])
        if len(users) == 1:
            return Assignment(gpu, users[0], "pod")
        if users:
            return Assignment(
                gpu, None, None, f"pod {namespace}/{pod} has engine endpoints {', '.join(users)}"
            )
        return Assignment(gpu, None, None, f"no engine endpoint has pod {namespace}/{pod}")
    if pod_mapped:
        return Assignment(gpu, None, None, "no pod uses it (its exporter maps pods)")
    if not gpu.hostname:
        return Assignment(gpu, None, None, "its series carry no pod and no host name")
    users = list(by_node.get(gpu.hostname, []))
    if len(users) == 1:
        return Assignment(gpu, users[0], "node")
    if users:
        return Assignment(
            gpu, None, None, f"node {gpu.hostname} runs {len(users)} engine endpoints"
        )
    return Assignment(gpu, None, None, f"no engine endpoint has node {gpu.hostname}")


def fleet_gpus(fleet: Fleet) -> GpuMap:
    """The GPU join of a fleet's enabled endpoints, from their registration labels and the
    exporters' latest series layouts."""
    from inventory.models import Endpoint
    from inventory.store import series_labels

    endpoints = (
        Endpoint.objects.enabled()
        .filter(fleet=fleet)
        .select_related("inventory")
        .defer("inventory__families", "inventory__engines", "inventory__evidence")
        .order_by("url")
    )
    engines: list[Engine] = []
    exporters: dict[int, str] = {}  # series-set id -> exporter instance
    for endpoint in endpoints:
        inventory = getattr(endpoint, "inventory", None)
        kind = inventory.detected_kind if inventory is not None else endpoint.kind
        if kind in ENGINE_KINDS:
            labels = endpoint.labels if isinstance(endpoint.labels, dict) else {}
            engines.append(Engine(endpoint.instance, {k: str(v) for k, v in labels.items()}))
        elif kind in DCGM_KINDS and inventory is not None:
            exporters[inventory.series_set_id] = endpoint.instance
    layouts = series_labels(series_set_ids=list(exporters)) if exporters else {}
    gpus = [
        gpu
        for series_set_id, exporter in sorted(exporters.items(), key=lambda item: item[1])
        for gpu in gpus_from_series(exporter, layouts.get(series_set_id, ()))
    ]
    return gpu_join(engines, gpus)


def engines_serving(fleet: Fleet, model_name: str, instances: Collection[str]) -> set[str]:
    """Which of these engine instances serve `model_name`, by their latest series layouts."""
    return {
        instance
        for instance, series in latest_series_labels(fleet, instances).items()
        if any(labels.get("model_name") == model_name for labels in series)
    }


def latest_series_labels(
    fleet: Fleet, instances: Collection[str]
) -> dict[str, list[Mapping[str, str]]]:
    """The labels of every series in the latest layout of each of these enabled endpoints
    of `fleet`, by instance (read only: shared)."""
    from inventory.models import Endpoint
    from inventory.store import series_labels

    sets = {
        e.inventory.series_set_id: e.instance
        for e in Endpoint.objects.enabled()
        .filter(fleet=fleet, inventory__isnull=False)
        .select_related("inventory")
        .defer("inventory__families", "inventory__engines", "inventory__evidence")
        if e.instance in instances
    }
    layouts = series_labels(series_set_ids=list(sets)) if sets else {}
    return {sets[series_set_id]: series for series_set_id, series in layouts.items()}
