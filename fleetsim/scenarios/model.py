"""What a scenario is: its ground-truth signals, its targets, and the helpers its
`apply` functions share (traffic pinned to the affected replicas, timed knob changes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fleetsim.fleet import Event, FleetModel
from fleetsim.replica import Replica
from fleetsim.workloads import Demand, Stream, Workload

# A signal label whose value is the affected replica's served model name (gateway and
# prober series are per model, and which model is affected depends on the fleet).
MODEL_LABEL = "{model}"

TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
WAITING = "vllm:num_requests_waiting"
BY_REASON = "vllm:num_requests_waiting_by_reason"
RUNNING = "vllm:num_requests_running"
PREEMPTIONS = "vllm:num_preemptions_total"
REQUEST_TPOT = "vllm:request_time_per_output_token_seconds"
QUEUE_TIME = "vllm:request_queue_time_seconds"
ITERATION_TOKENS = "vllm:iteration_tokens_total"
SUCCESS = "vllm:request_success_total"
GATEWAY_REQUESTS = "fleetscope_gateway_requests_total"
GATEWAY_RETRIES = "fleetscope_gateway_retries_total"
PROBER_CHECKS = "fleetscope_prober_checks_total"


class ScenarioError(ValueError):
    """A scenario that cannot run on this fleet (wrong targets, missing capability)."""


@dataclass(frozen=True, slots=True)
class Signal:
    """A metric that should move during the incident, which way, and by how much.

    `metric` (and `denominator`) are the current dialect's names; each affected replica
    gets them as it exposes them (see `fleetsim.dialects.exposed_name`), or `instead`
    when it exposes nothing like it. `rel` and `delta` are the smallest relative and
    absolute change that counts for up/down (the larger wins), or the tolerance for
    flat/not_up; `why` is the physics that sets them.
    """

    metric: str  # exposition sample or family name
    kind: str  # gauge | rate | mean | ratio | present | absent | up | reset | changes
    direction: str  # up | down | flat | not_up | present | absent
    rel: float = 0.0
    delta: float = 0.0
    why: str = ""
    # affected replicas; the gateway or the prober; or "model": every replica serving
    # the affected replicas' model (what a fleet-wide average of that model sees)
    scope: str = "affected"
    labels: dict[str, str] = field(default_factory=dict)  # MODEL_LABEL: the replica's model
    denominator: str | None = None
    within_s: float | None = None  # only the first seconds of the window show it
    peak: str | None = None  # "min"/"max": a brief dip or spike on any affected replica
    gpus: tuple[int, ...] = ()  # DCGM: one check per listed GPU of the replica (by UUID)
    aggregate: str = "sum"  # gauges: over series and replicas (sum), or per replica (max/avg)
    instead: Signal | None = None  # what a replica that lacks `metric` shows instead
    each: bool = False  # one entry per affected replica: it moves on each, not just in sum


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    description: str
    branch: str  # the triage branch a correct diagnosis reaches
    duration_s: float
    signals: tuple[Signal, ...]
    default_targets: Callable[[FleetModel], list[int]]
    apply: Callable[[FleetModel, list[int], float, float], None]
    check_targets: Callable[[FleetModel, list[int]], None] = lambda fleet, targets: None
    # The dialect an affected replica serves during the window, and (when the scenario
    # is about names) the signals that dialect change shows, already in exposed names.
    incident_dialect: Callable[[str], str] = lambda dialect: dialect
    signals_of: Callable[[str], tuple[Signal, ...]] | None = None


# Catalog keys (inventory.catalog) of the names signals use, under any of their names.
CATALOG_KEYS = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:num_requests_waiting_by_reason": "waiting_by_reason",
    "vllm:request_queue_time_seconds": "queue_time",
    "vllm:time_to_first_token_seconds": "ttft",
    "vllm:request_prompt_tokens": "prompt_len",
    "vllm:request_prefill_time_seconds": "prefill_time",
    "vllm:inter_token_latency_seconds": "itl",
    "vllm:time_per_output_token_seconds": "itl",
    "vllm:kv_cache_usage_perc": "kv_usage",
    "vllm:gpu_cache_usage_perc": "kv_usage",
    "vllm:num_preemptions_total": "preemptions",
    "vllm:request_time_per_output_token_seconds": "request_tpot",
    "vllm:iteration_tokens_total": "iteration_tokens",
    "vllm:request_success_total": "request_success",
    "vllm:prompt_tokens_total": "prompt_tokens",
    "vllm:prefix_cache_hits_total": "prefix_hits",
    "vllm:gpu_prefix_cache_hits_total": "prefix_hits",
    "vllm:prefix_cache_queries_total": "prefix_queries",
    "vllm:gpu_prefix_cache_queries_total": "prefix_queries",
    "vllm:gpu_prefix_cache_hit_rate": "prefix_hit_rate",
    "vllm:num_requests_swapped": "swapped",
    "vllm:cpu_cache_usage_perc": "cpu_kv_usage",
    "vllm:time_in_queue_requests": "queue_time",
    "process_start_time_seconds": "process_start_time",
    "process_cpu_seconds_total": "process_cpu",
    "DCGM_FI_DEV_SM_CLOCK": "gpu_sm_clock",
    "DCGM_FI_DEV_POWER_USAGE": "gpu_power",
    "DCGM_FI_DEV_GPU_TEMP": "gpu_temp",
    "DCGM_FI_DEV_XID_ERRORS": "gpu_xid",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "gpu_nvlink_bandwidth",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "gpu_pcie_tx",
    "fleetscope_gateway_requests_total": "gateway_requests",
    "fleetscope_gateway_retries_total": "gateway_retries",
    "fleetscope_prober_checks_total": "prober_checks",
}


def up(metric: str, kind: str, rel: float, delta: float, why: str, **more: Any) -> Signal:
    return Signal(metric, kind, "up", rel, delta, why, **more)


def down(metric: str, kind: str, rel: float, delta: float, why: str, **more: Any) -> Signal:
    return Signal(metric, kind, "down", rel, delta, why, **more)


def flat(metric: str, kind: str, rel: float, delta: float, why: str, **more: Any) -> Signal:
    return Signal(metric, kind, "flat", rel, delta, why, **more)


def not_up(metric: str, kind: str, rel: float, delta: float, why: str, **more: Any) -> Signal:
    return Signal(metric, kind, "not_up", rel, delta, why, **more)


def first(fleet: FleetModel) -> list[int]:
    return [0]


def first_model(fleet: FleetModel) -> list[int]:
    return [r.index for r in fleet.replicas_of(fleet.replicas[0].cfg.model.served_name)]


def by_model(fleet: FleetModel, targets: list[int]) -> dict[str, list[Replica]]:
    groups: dict[str, list[Replica]] = {}
    for i in targets:
        replica = fleet.replicas[i]
        groups.setdefault(replica.cfg.model.served_name, []).append(replica)
    return groups


def pin(
    fleet: FleetModel,
    name: str,
    demand: Demand,
    wl: Workload,
    rate: float,
    group: list[Replica],
    at: float,
    duration: float,
) -> None:
    """Extra traffic that only the affected replicas receive, during the window."""
    fleet.add_stream(
        Stream(
            demand,
            wl,
            rate,
            seed=f"{fleet.seed}:scenario:{name}:{demand.model}:{demand.tenant}:{wl.name}",
            epoch=fleet.epoch,
            ids=fleet.ids,
            window=(at, at + duration),
            pinned=tuple(r.index for r in group),
            bursts=False,
            follow_diurnal=False,  # sized for its window, not for the hour it starts at
        )
    )


def window(fleet: FleetModel, at: float, duration: float, start: Event, end: Event) -> None:
    fleet.schedule(at, start)
    fleet.schedule(at + duration, end)


def knobs(replica: Replica, **values: Any) -> Event:
    """An event that sets knobs on `replica`."""
    return lambda t: replica.set_knobs(**values)
