"""What kind of exporter an endpoint is, and which vLLM naming era an engine speaks.

Pure: families in, frozen reports out, each with `evidence`, short sentences naming
the families and labels that decided it.

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from inventory.catalog.families import FamilyLike, few, vllm_samples, wire_names
from inventory.catalog.index import (
    ENGINE_ONLY_NAMES,
    RENAMED_PAIRS,
    ROUTER_ONLY_NAMES,
    V0_NAMES,
    entry_for_name,
)

EndpointKind = Literal["engine", "router", "dcgm", "gateway", "prober", "other"]
Dialect = Literal["current", "v1-0.10", "v1-0.8", "v0", "unknown", "not-vllm"]
# FleetScope's golden-set prober (fleetsim/README.md): its quality signal, not a server.
PROBER_PREFIX = "fleetscope_prober_"
GATEWAY_PREFIXES = (
    "inference_objective_",
    "inference_pool_",
    "inference_extension_",
    "fleetscope_gateway_",
)
DCGM_PREFIXES = ("DCGM_FI_", "DCGM_EXP_")
V0_HELP_HINT = "running on GPU"  # V1 says "in model execution batches"


@dataclass(frozen=True, slots=True)
class KindReport:
    kind: EndpointKind
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DialectReport:
    dialect: Dialect
    evidence: tuple[str, ...]


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
        return KindReport("dcgm", (f"{len(dcgm)} DCGM families: {few(dcgm)}",))
    gateway = [n for n in names if n.startswith(GATEWAY_PREFIXES)]
    if gateway:
        return KindReport(
            "gateway",
            (
                f"FleetScope gateway families: {few(gateway)}"
                if all(n.startswith("fleetscope_gateway_") for n in gateway)
                else f"Gateway API inference-extension families: {few(gateway)}",
            ),
        )
    prober = [n for n in names if n.startswith(PROBER_PREFIX)]
    if prober:
        return KindReport("prober", (f"FleetScope golden-set prober families: {few(prober)}",))
    kinds = [series_kind(s.labels) for s in vllm_samples(families)]
    router_names, engine_names = names & ROUTER_ONLY_NAMES, names & ENGINE_ONLY_NAMES
    router = [f"router-only names: {few(router_names)}"] if router_names else []
    if "router" in kinds:
        router.append(f"{kinds.count('router')} vllm: series labelled by server")
    engine = [f"engine-only names: {few(engine_names)}"] if engine_names else []
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
        return f"Ray-style names with '_' for ':' ({few(ray)}): vLLM's Ray stat logger", True
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
        evidence = [f"V0-only names: {few(v0)}"] if v0 else []
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
        return DialectReport("v1-0.8", (f"pre-rename names only: {few(old_only)}", label_note))
    new = sorted({new for _, new in RENAMED_PAIRS if new in names})
    if new and label != "absent":
        return DialectReport("current", (f"only current names: {few(new)}", label_note))
    if new:
        return DialectReport("unknown", (f"current names: {few(new)}", label_note))
    return DialectReport("unknown", ("none of the renamed families that date a vLLM build",))
