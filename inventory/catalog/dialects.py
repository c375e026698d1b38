"""What one endpoint's families say about it: exporter kind, vLLM naming era, DP layout, and more.

    profile = profile_endpoint(parse(body))
    profile.kind, profile.dialect, profile.engines  # "engine", "v1-0.10", ("0", "1")
    profile.evidence                                # why, for the UI

Every function is pure: families in, frozen dataclasses out. Each report
carries `evidence`, short sentences naming the families and labels that
decided it. Families are anything shaped like `inventory.exposition.parser.Family`.

Dialects (reference sections 2 and 6):

* `v0`      V0-only names (`vllm:num_requests_swapped`, `vllm:cpu_cache_usage_perc`, …)
            or the V0 HELP text of `vllm:num_requests_running`, and no `engine` label.
* `v1-0.8`  a pre-rename name (`vllm:gpu_cache_usage_perc`, `vllm:gpu_prefix_cache_*`,
            `vllm:time_per_output_token_seconds`) without its replacement.
* `v1-0.10` an old name and its replacement side by side (0.9.2 through 0.11.x).
* `current` only current names, with the `engine` label.
* `unknown` vLLM-looking but contradictory or undatable; `not-vllm` for everything else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from inventory.catalog.buckets import B_REQ, B_TOK, B_TTFT, next_one_two_five, one_two_five
from inventory.catalog.buckets import LAST_EDGE_BEFORE_2025_04_07 as OLD_LAST
from inventory.catalog.index import (
    ENGINE_ONLY_NAMES,
    RENAMED_PAIRS,
    ROUTER_ONLY_NAMES,
    V0_NAMES,
    entry_for_name,
)

EndpointKind = Literal["engine", "router", "dcgm", "gateway", "prober", "other"]
Dialect = Literal["current", "v1-0.10", "v1-0.8", "v0", "unknown", "not-vllm"]
BucketGeneration = Literal["post-2025-04-07", "pre-2025-04-07", "mixed", "unknown"]

# (family, current edges, last edge before 2025-04-07)
_BUCKET_PROBES: tuple[tuple[str, tuple[float, ...], float], ...] = (
    ("vllm:time_to_first_token_seconds", B_TTFT, OLD_LAST["ttft"]),
    ("vllm:inter_token_latency_seconds", B_TOK, OLD_LAST["token_gap"]),
    ("vllm:time_per_output_token_seconds", B_TOK, OLD_LAST["token_gap"]),
    ("vllm:request_time_per_output_token_seconds", B_TOK, OLD_LAST["token_gap"]),
    ("vllm:e2e_request_latency_seconds", B_REQ, OLD_LAST["request"]),
)
# Histograms bucketed 1, 2, 5, 10, … while the edge is <= max_model_len (table A.3).
TOKEN_COUNT_HISTOGRAMS = (
    "vllm:request_prompt_tokens",
    "vllm:request_generation_tokens",
    "vllm:request_max_num_generation_tokens",
    "vllm:request_params_max_tokens",
    "vllm:request_prefill_kv_computed_tokens",
)
# FleetScope's golden-set prober (fleetsim/README.md): its quality signal, not a server.
PROBER_PREFIX = "fleetscope_prober_"
GATEWAY_PREFIXES = (
    "inference_objective_",
    "inference_pool_",
    "inference_extension_",
    "fleetscope_gateway_",
)
DCGM_PREFIXES = ("DCGM_FI_", "DCGM_EXP_")
PROCESS_PREFIXES = ("process_", "python_")
V0_HELP_HINT = "running on GPU"  # V1 says "in model execution batches"


class SampleLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def value(self) -> float: ...


class FamilyLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def help(self) -> str: ...
    @property
    def samples(self) -> Sequence[SampleLike]: ...


@dataclass(frozen=True, slots=True)
class KindReport:
    kind: EndpointKind
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DialectReport:
    dialect: Dialect
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DataParallel:
    """`engines` are the `engine` label values (global DP ranks) this endpoint reports.

    `multiprocess` is None when there is nothing to judge by (no vllm: counters or
    histograms, as on DCGM or gateway endpoints).
    """

    engines: tuple[str, ...]
    multiprocess: bool | None
    evidence: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.engines)


@dataclass(frozen=True, slots=True)
class DcgmLabels:
    """Which spelling of the host and UUID labels a dcgm-exporter uses, and what it covers."""

    host_labels: tuple[str, ...]
    uuid_labels: tuple[str, ...]
    gpus: tuple[str, ...]
    driver_versions: tuple[str, ...]
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MaxModelLen:
    """A bound, never the value: max_model_len is in [at_least, below)."""

    at_least: int | None
    below: int | None
    source: str | None
    message: str


@dataclass(frozen=True, slots=True)
class BucketSet:
    generation: BucketGeneration
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EndpointProfile:
    """All reports for one endpoint; `kind`, `dialect`, `engines`, `evidence` flatten them."""

    kind_report: KindReport
    dialect_report: DialectReport
    data_parallel: DataParallel
    dcgm: DcgmLabels | None
    max_model_len: MaxModelLen
    buckets: BucketSet

    @property
    def kind(self) -> EndpointKind:
        return self.kind_report.kind

    @property
    def dialect(self) -> Dialect:
        return self.dialect_report.dialect

    @property
    def engines(self) -> tuple[str, ...]:
        return self.data_parallel.engines

    @property
    def evidence(self) -> tuple[str, ...]:
        found = self.kind_report.evidence + self.dialect_report.evidence
        found += self.data_parallel.evidence + (self.dcgm.evidence if self.dcgm else ())
        if self.max_model_len.at_least is not None:
            found += (self.max_model_len.message,)
        if self.buckets.generation != "unknown":
            found += (f"latency buckets: {self.buckets.generation} set",)
        return tuple(dict.fromkeys(found))


def _is_created_family(family: FamilyLike) -> bool:
    # prometheus_client's text parser keeps `<base>_created` as its own gauge family.
    return family.type == "gauge" and family.name.endswith("_created")


def wire_names(families: Iterable[FamilyLike]) -> frozenset[str]:
    """The names as scraped: counters with `_total`, histograms by base, `_created` left out."""
    names: set[str] = set()
    for family in families:
        if _is_created_family(family):
            continue
        if family.type != "counter":
            names.add(family.name)
            continue
        on_wire = {s.name for s in family.samples if not s.name.endswith("_created")}
        names |= on_wire or {family.name + "_total"}
    return frozenset(names)


def _vllm_samples(families: Iterable[FamilyLike]) -> Iterable[SampleLike]:
    for family in families:
        if family.name.startswith("vllm:"):
            yield from family.samples


def _few(names: Iterable[str], limit: int = 3) -> str:
    ordered = sorted(names)
    shown = ", ".join(ordered[:limit])
    return shown + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def series_kind(labels: Mapping[str, str]) -> Literal["engine", "router"] | None:
    """Who wrote one `vllm:` series: engines label by model/engine, the router by `server`."""
    if "model_name" in labels or "engine" in labels:
        return "engine"
    if "server" in labels:
        return "router"
    return None


def detect_kind(families: Sequence[FamilyLike]) -> KindReport:
    """engine / router / dcgm / gateway / prober / other, from names and the labels on
    vllm: series."""
    names = wire_names(families)
    dcgm = [n for n in names if n.startswith(DCGM_PREFIXES)]
    if dcgm:
        return KindReport("dcgm", (f"{len(dcgm)} DCGM families: {_few(dcgm)}",))
    gateway = [n for n in names if n.startswith(GATEWAY_PREFIXES)]
    if gateway:
        return KindReport(
            "gateway",
            (
                f"FleetScope gateway families: {_few(gateway)}"
                if all(n.startswith("fleetscope_gateway_") for n in gateway)
                else f"Gateway API inference-extension families: {_few(gateway)}",
            ),
        )
    prober = [n for n in names if n.startswith(PROBER_PREFIX)]
    if prober:
        return KindReport("prober", (f"FleetScope golden-set prober families: {_few(prober)}",))
    kinds = [series_kind(s.labels) for s in _vllm_samples(families)]
    router_names, engine_names = names & ROUTER_ONLY_NAMES, names & ENGINE_ONLY_NAMES
    router = [f"router-only names: {_few(router_names)}"] if router_names else []
    if "router" in kinds:
        router.append(f"{kinds.count('router')} vllm: series labelled by server")
    engine = [f"engine-only names: {_few(engine_names)}"] if engine_names else []
    if "engine" in kinds:
        engine.append(f"{kinds.count('engine')} vllm: series labelled by model_name/engine")
    if router and engine:
        return KindReport(
            "other", ("router and engine series mixed in one scrape", *router, *engine)
        )
    if router:
        return KindReport("router", tuple(router))
    if engine:
        return KindReport("engine", tuple(engine))
    return KindReport("other", (_other_evidence(names)[0],))


def _other_evidence(names: frozenset[str]) -> tuple[str, bool]:
    """Why an endpoint is "other", and whether it may still be a vLLM server."""
    ray = [n for n in names if n.startswith("vllm_") and "vllm:" + n[5:] in ENGINE_ONLY_NAMES]
    if ray:
        return f"Ray-style names with '_' for ':' ({_few(ray)}): vLLM's Ray stat logger", True
    if any(n.startswith("vllm:") for n in names):
        return "only vllm: names engines and routers share, and no labels to tell them apart", True
    if any(n.startswith("dynamo_") for n in names):
        return "NVIDIA Dynamo families (dynamo_*), not vLLM's own exporter", False
    if any(n.startswith("http_") for n in names):
        only_http = (
            "only HTTP/process families: a vLLM server with --disable-log-stats looks like this"
        )
        return only_http, True
    return "no vLLM, router, DCGM or gateway families", False


def _engine_label_state(families: Sequence[FamilyLike]) -> Literal["present", "absent", "unseen"]:
    # Only metrics whose current form carries `engine` count; info-style gauges are skipped
    # because their label set is free-form config (lora_requests_info never has `engine`).
    seen = False
    for family in families:
        item = entry_for_name(family.name)
        if item is None or item.type == "info" or "engine" not in item.labels:
            continue
        if not family.samples:
            continue
        seen = True
        if any("engine" in s.labels for s in family.samples):
            return "present"
    return "absent" if seen else "unseen"


def _running_help(families: Sequence[FamilyLike]) -> str:
    for family in families:
        if family.name == "vllm:num_requests_running":
            return family.help
    return ""


def detect_dialect(families: Sequence[FamilyLike], kind: KindReport | None = None) -> DialectReport:
    """Which vLLM naming era an engine endpoint speaks; see the module docstring for the rules."""
    kind = kind or detect_kind(families)
    if kind.kind in ("dcgm", "gateway", "prober", "router"):
        return DialectReport("not-vllm", (f"a {kind.kind} endpoint, not a vLLM engine",))
    names = wire_names(families)
    if kind.kind == "other":
        vllm_like = _other_evidence(names)[1]
        return DialectReport("unknown" if vllm_like else "not-vllm", kind.evidence)
    label = _engine_label_state(families)
    label_note = {
        "present": "engine label present (vLLM from 2025-03-27)",
        "absent": "no engine label (V0, or V1 up to about 0.8.2)",
        "unseen": "no samples to check for the engine label",
    }[label]
    v0 = sorted(names & V0_NAMES)
    help_v0 = V0_HELP_HINT in _running_help(families)
    if v0 or help_v0:
        evidence = [f"V0-only names: {_few(v0)}"] if v0 else []
        if help_v0:
            evidence.append("vllm:num_requests_running HELP says 'running on GPU' (V0 wording)")
        if label == "present":
            return DialectReport("unknown", (*evidence, label_note, "V0 never had that label"))
        return DialectReport("v0", (*evidence, label_note))
    side = [f"{old} beside {new}" for old, new in RENAMED_PAIRS if old in names and new in names]
    if side:
        return DialectReport("v1-0.10", (*side, label_note))
    old_only = sorted({old for old, new in RENAMED_PAIRS if old in names})
    if old_only:
        return DialectReport("v1-0.8", (f"pre-rename names only: {_few(old_only)}", label_note))
    new = sorted({new for _, new in RENAMED_PAIRS if new in names})
    if new and label != "absent":
        return DialectReport("current", (f"only current names: {_few(new)}", label_note))
    if new:
        return DialectReport("unknown", (f"current names: {_few(new)}", label_note))
    return DialectReport("unknown", ("none of the renamed families that date a vLLM build",))


def _rank_order(value: str) -> tuple[int, int, str]:
    # Numeric ranks in numeric order ("2" before "10"); anything else after them.
    return (0, int(value), value) if value.isdigit() else (1, 0, value)


def detect_data_parallel(families: Sequence[FamilyLike]) -> DataParallel:
    """DP ranks from the `engine` label, and whether /metrics is in multiprocess mode."""
    engines = tuple(
        sorted(
            {s.labels["engine"] for s in _vllm_samples(families) if "engine" in s.labels},
            key=_rank_order,
        )
    )
    evidence = [f"engine label values: {', '.join(engines)}"] if engines else []
    if engines and "0" not in engines:
        evidence.append("no engine 0: an externally load-balanced replica owning some DP ranks")
    if not any(f.name.startswith(("vllm:", "http_")) for f in families):
        # Not a vLLM API server, so whether its registry is multiprocess means nothing here.
        return DataParallel(engines, None, tuple(evidence))
    process = sorted(f.name for f in families if f.name.startswith(PROCESS_PREFIXES))
    created = any(
        _is_created_family(f) or any(s.name.endswith("_created") for s in f.samples)
        for f in families
    )
    # Only a vLLM server's own cumulative families say anything about its registry mode.
    cumulative = any(
        f.samples and f.type in ("counter", "histogram", "summary") and f.name.startswith("vllm:")
        for f in families
    )
    multiprocess: bool | None = None
    if process or created:
        multiprocess = False
        found = [f"process families ({_few(process)})"] if process else []
        found += ["_created series"] if created else []
        evidence.append("single-process: " + " and ".join(found))
    elif cumulative:
        multiprocess = True
        evidence.append("multiprocess: no python_*/process_* families and no _created series")
    return DataParallel(engines, multiprocess, tuple(evidence))


def dcgm_host(labels: Mapping[str, str]) -> str | None:
    """The host of a DCGM series: released exporters say `Hostname`, main says `hostname`."""
    return labels.get("Hostname") or labels.get("hostname")


def dcgm_uuid(labels: Mapping[str, str]) -> str | None:
    """The GPU UUID: `UUID`, `uuid` with the old-style flag, `gpu_uuid` on NVLink series."""
    return labels.get("UUID") or labels.get("uuid") or labels.get("gpu_uuid")


def detect_dcgm_labels(families: Sequence[FamilyLike]) -> DcgmLabels:
    """Label spellings and coverage of a dcgm-exporter endpoint."""
    keys: set[str] = set()
    gpus: set[str] = set()
    drivers: set[str] = set()
    for family in families:
        if not family.name.startswith(DCGM_PREFIXES):
            continue
        for sample in family.samples:
            keys.update(sample.labels)
            if "gpu" in sample.labels:
                gpus.add(sample.labels["gpu"])
            if "DCGM_FI_DRIVER_VERSION" in sample.labels:
                drivers.add(sample.labels["DCGM_FI_DRIVER_VERSION"])
    hosts = tuple(k for k in ("Hostname", "hostname") if k in keys)
    uuids = tuple(k for k in ("UUID", "uuid") if k in keys)
    evidence = []
    if hosts == ("Hostname",):
        evidence.append("host label Hostname, as in every released dcgm-exporter")
    elif hosts == ("hostname",):
        evidence.append("host label hostname: dcgm-exporter main after 2026-05-12")
    elif hosts:
        evidence.append("both Hostname and hostname: exporters of different versions")
    if uuids == ("uuid",):
        evidence.append("lowercase uuid: the exporter runs with the old-style label flag")
    if "GPU_I_ID" in keys:
        evidence.append("MIG instances present (GPU_I_ID)")
    if keys & {"pod", "pod_name"}:
        evidence.append("Kubernetes pod mapping on: join to vLLM by pod/namespace")
    return DcgmLabels(
        hosts, uuids, tuple(sorted(gpus, key=_rank_order)), tuple(sorted(drivers)), tuple(evidence)
    )


def _bucket_edges(family: FamilyLike) -> tuple[float, ...]:
    bucket = family.name + "_bucket"
    edges: set[float] = set()
    for sample in family.samples:
        if sample.name != bucket or "le" not in sample.labels:
            continue
        try:
            edge = float(sample.labels["le"])
        except ValueError:
            continue
        if math.isfinite(edge):
            edges.add(edge)
    return tuple(sorted(edges))


def _histograms(families: Sequence[FamilyLike]) -> dict[str, tuple[float, ...]]:
    return {f.name: _bucket_edges(f) for f in families if f.type == "histogram"}


def infer_max_model_len(families: Sequence[FamilyLike]) -> MaxModelLen:
    """Bound max_model_len from the last edge of a 1-2-5 token-count histogram.

    vLLM adds edges while they are <= max_model_len, so the last edge L gives
    L <= max_model_len < next(L). The exact value is not exposed anywhere.
    """
    histograms = _histograms(families)
    for name in TOKEN_COUNT_HISTOGRAMS:
        edges = histograms.get(name)
        if not edges or edges != tuple(float(v) for v in one_two_five(edges[-1])):
            continue
        last = int(edges[-1])
        below = next_one_two_five(last)
        message = (
            f"max_model_len is at least {last} and below {below} "
            f"(last 1-2-5 bucket edge of {name}); vLLM does not expose the exact value"
        )
        return MaxModelLen(last, below, name, message)
    return MaxModelLen(None, None, None, "no 1-2-5 token-count histogram with buckets to read")


def infer_bucket_generation(families: Sequence[FamilyLike]) -> BucketSet:
    """Whether latency buckets predate the 2025-04-07 widening (#15202), from their last edges."""
    histograms = _histograms(families)
    votes: set[BucketGeneration] = set()
    evidence: list[str] = []
    for name, current, old_last in _BUCKET_PROBES:
        edges = histograms.get(name)
        if not edges:
            continue
        if edges == current:
            votes.add("post-2025-04-07")
            evidence.append(f"{name}: the current bucket set")
        elif edges[-1] > old_last:
            votes.add("post-2025-04-07")
            evidence.append(f"{name}: edges reach {edges[-1]:g} s, past the old {old_last:g} s")
        elif edges[-1] == old_last:
            votes.add("pre-2025-04-07")
            evidence.append(f"{name}: edges stop at {old_last:g} s, the pre-2025-04-07 set")
        else:
            evidence.append(f"{name}: unrecognised edges ending at {edges[-1]:g} s")
        if name == "vllm:e2e_request_latency_seconds" and edges[0] == 1.0:
            evidence.append(f"{name}: starts at 1 s, the V0 <= 0.6.3 set")
    if len(votes) == 1:
        return BucketSet(votes.pop(), tuple(evidence))
    if votes:
        return BucketSet("mixed", tuple(evidence))
    return BucketSet("unknown", tuple(evidence) or ("no latency histogram with buckets",))


def profile_endpoint(families: Iterable[FamilyLike]) -> EndpointProfile:
    """Every report above for one endpoint's scrape."""
    fams = tuple(families)
    kind = detect_kind(fams)
    return EndpointProfile(
        kind_report=kind,
        dialect_report=detect_dialect(fams, kind),
        data_parallel=detect_data_parallel(fams),
        dcgm=detect_dcgm_labels(fams) if kind.kind == "dcgm" else None,
        max_model_len=infer_max_model_len(fams),
        buckets=infer_bucket_generation(fams),
    )


# The name inventory.services and the scrape command call it by.
detect_endpoint = profile_endpoint
