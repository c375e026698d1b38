"""Incidents injected into a fleet at a time, on chosen replicas, with their ground truth.

Each scenario changes the simulation's inputs (traffic, machine knobs, process
lifecycle), never its outputs: the metrics move because the simulated requests
and GPUs behave differently. Intensities are sized from the affected replicas'
own configuration so every scenario shows at any fleet size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from fleetsim.config import DIALECTS
from fleetsim.dcgm import DcgmExporter
from fleetsim.fleet import Event, FleetModel
from fleetsim.replica import FRONTEND_BASE_S, FRONTEND_PER_TOKEN_S, Replica
from fleetsim.roofline import StepModel, requests_per_second
from fleetsim.workloads import DEMANDS, WORKLOADS, Demand, Dist, Stream, Workload, variant

BURST_EXTRA_LOAD = 1.0  # a burst adds interactive traffic worth the targets' whole capacity
TOKENIZER_UTILIZATION = 1.15  # the starved front end needs 115% of its CPU at normal load
SURGE_PREFILL_SHARE = 0.3  # long prompts take this share of the targets' prefill capacity
KV_OVERSUBSCRIPTION = 1.4  # the batch job wants this many times the sequences KV can hold
THRASH_LOAD = 0.25  # adapter traffic as a share of the targets' chat capacity
THROTTLED_CLOCK = 0.5
THROTTLED_MEMORY = 0.75
THROTTLE_HEAT_C = 24.0
DEGRADED_LINK = 0.2  # a link retrained at reduced width, with replays: slower and laggier
XID_NVLINK = 74
THRASH_ADAPTERS = 16


class ScenarioError(ValueError):
    """A scenario that cannot run on this fleet (wrong targets, missing capability)."""


@dataclass(frozen=True, slots=True)
class Signal:
    """A metric that should move during the incident, and which way."""

    metric: str  # exposition sample or family name
    kind: str  # gauge | rate | mean | ratio | present | up | reset | changes
    direction: str  # up | down | flat | present (absent before, seen during)
    scope: str = "affected"  # affected replicas, or the gateway
    labels: dict[str, str] = field(default_factory=dict)
    denominator: str | None = None
    within_s: float | None = None  # only the first seconds of the window show it
    peak: str | None = None  # "min"/"max": a brief dip or spike on any affected replica


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


def _first(fleet: FleetModel) -> list[int]:
    return [0]


def _first_model(fleet: FleetModel) -> list[int]:
    return [r.index for r in fleet.replicas_of(fleet.replicas[0].cfg.model.served_name)]


def _tp_group(fleet: FleetModel) -> list[int]:
    return [r.index for r in fleet.replicas if r.cfg.tp > 1][:1]


def _lora(fleet: FleetModel) -> list[int]:
    return [r.index for r in fleet.replicas if r.cfg.deployment.enable_lora][:1]


def _need_tp(fleet: FleetModel, targets: list[int]) -> None:
    if not targets or any(fleet.replicas[i].cfg.tp < 2 for i in targets):
        raise ScenarioError(
            "collective-degradation needs replicas with tensor parallelism "
            "(replica 1 of the default layout has TP 4: use --replicas 2 or more)"
        )


def _need_lora(fleet: FleetModel, targets: list[int]) -> None:
    if not targets or any(not fleet.replicas[i].cfg.deployment.enable_lora for i in targets):
        raise ScenarioError("lora-thrash needs LoRA-enabled replicas (Llama 8B ones)")


def _by_model(fleet: FleetModel, targets: list[int]) -> dict[str, list[Replica]]:
    groups: dict[str, list[Replica]] = {}
    for i in targets:
        replica = fleet.replicas[i]
        groups.setdefault(replica.cfg.model.served_name, []).append(replica)
    return groups


def _pin(
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
        )
    )


def _window(fleet: FleetModel, at: float, duration: float, start: Callable[[float], None],
            end: Callable[[float], None]) -> None:  # fmt: skip
    fleet.schedule(at, start)
    fleet.schedule(at + duration, end)


def _traffic_burst(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in _by_model(fleet, targets).items():
        demands = [d for d in DEMANDS if d.model == model and d.workload in ("chat", "rag")]
        share = sum(d.share for d in demands)
        prompt = sum(d.share * WORKLOADS[d.workload].mean_prompt for d in demands) / share
        output = sum(d.share * WORKLOADS[d.workload].output.mean for d in demands) / share
        capacity = sum(r.cfg.dp * requests_per_second(r.cfg, prompt, output) for r in group)
        for d in demands:
            rate = BURST_EXTRA_LOAD * capacity * d.share / share
            _pin(fleet, "burst", d, WORKLOADS[d.workload], rate, group, at, duration)


def _long_prompt_surge(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in _by_model(fleet, targets).items():
        cfg = group[0].cfg
        hi = int(0.85 * cfg.max_model_len) - 1024 - 350
        median = min(12000.0, 0.55 * hi)
        wl = variant(WORKLOADS["rag"], name="rag-long",
                     prompt=Dist(median, 0.3, int(median / 2), hi),
                     output=Dist(260, 0.6, 16, 1024), max_tokens_share=1.0)  # fmt: skip
        chunk = cfg.deployment.max_num_batched_tokens
        step, *_ = StepModel(cfg).cost(0, 0.0, chunk, chunk / 2)
        prefill_tokens_per_s = chunk / step * cfg.dp * len(group)
        rate = SURGE_PREFILL_SHARE * prefill_tokens_per_s / wl.mean_prompt
        _pin(fleet, "surge", Demand("globex", model, "rag", 1.0), wl, rate, group, at, duration)


def _kv_pressure(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in _by_model(fleet, targets).items():
        cfg = group[0].cfg
        max_len = cfg.max_model_len
        prompt_hi = int(0.35 * max_len)
        prompt = min(6000.0, 0.3 * max_len)
        output = min(2500.0, 0.3 * max_len)
        max_tokens = max_len - prompt_hi - 1
        wl = variant(WORKLOADS["batch"], name="batch-long",
                     prompt=Dist(prompt, 0.3, int(prompt / 2), prompt_hi),
                     output=Dist(output, 0.25, int(output / 2), max_tokens),
                     max_tokens=max_tokens)  # fmt: skip
        ctx = prompt + output / 2
        fill = min(cfg.deployment.max_num_seqs, int(cfg.kv_tokens / ctx))
        step, *_ = StepModel(cfg).cost(fill, fill * ctx, 0, 0.0)
        # Little's law: more sequences than the KV cache holds, each held for its decode.
        rate = KV_OVERSUBSCRIPTION * fill / (output * step) * cfg.dp * len(group)
        demand = Demand("umbrella", model, "batch", 1.0)
        _pin(fleet, "kv", demand, wl, rate, group, at, duration)


def _knobs(replica: Replica, **knobs: float) -> Event:
    """An event that sets `knobs` on `replica`."""
    return lambda t: replica.set_knobs(**knobs)


def _cold_restart(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    stagger = duration / (len(targets) + 1)
    for j, i in enumerate(targets):
        replica = fleet.replicas[i]
        down = at + j * stagger
        fleet.schedule(down, partial(fleet.crash, replica))
        fleet.schedule(down + fleet.load_time(replica), partial(fleet.restart, replica))


def _tokenizer_saturation(
    fleet: FleetModel, targets: list[int], at: float, duration: float
) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        model = replica.cfg.model.served_name
        demands = [d for d in DEMANDS if d.model == model]
        rate = 0.0
        prompt = 0.0
        for d in demands:
            r = fleet.base_rates.get((d.tenant, d.model, d.workload), 0.0)
            r *= WORKLOADS[d.workload].turns_mean or 1.0
            rate += r
            prompt += r * WORKLOADS[d.workload].mean_prompt
        per_replica = rate / len(fleet.replicas_of(model)) / replica.cfg.dp
        service = FRONTEND_BASE_S + FRONTEND_PER_TOKEN_S * prompt / max(rate, 1e-9)
        slowdown = TOKENIZER_UTILIZATION / max(per_replica * service, 1e-9)
        _window(fleet, at, duration,
                _knobs(replica, frontend_slowdown=slowdown),
                _knobs(replica, frontend_slowdown=1.0))  # fmt: skip


def _gpu_throttle(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica, exporter = fleet.replicas[i], fleet.dcgm[i]

        def start(t: float, r: Replica = replica, e: DcgmExporter = exporter) -> None:
            r.set_knobs(clock_factor=THROTTLED_CLOCK, mem_factor=THROTTLED_MEMORY)
            e.temp_offset = THROTTLE_HEAT_C

        def end(t: float, r: Replica = replica, e: DcgmExporter = exporter) -> None:
            r.set_knobs(clock_factor=1.0, mem_factor=1.0)
            e.temp_offset = 0.0

        _window(fleet, at, duration, start, end)


def _collective_degradation(
    fleet: FleetModel, targets: list[int], at: float, duration: float
) -> None:
    for i in targets:
        replica, exporter = fleet.replicas[i], fleet.dcgm[i]

        def start(t: float, r: Replica = replica, e: DcgmExporter = exporter) -> None:
            r.set_knobs(link_factor=DEGRADED_LINK)
            e.set_xid(XID_NVLINK, [0, 1])  # both ends of the failing link

        _window(fleet, at, duration, start, _knobs(replica, link_factor=1.0))


def _replica_down(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        _window(fleet, at, duration,
                partial(fleet.crash, replica),
                partial(fleet.restart, replica))  # fmt: skip


def older_dialect(dialect: str) -> str:
    i = DIALECTS.index(dialect)
    return DIALECTS[i + 1] if i + 1 < len(DIALECTS) else DIALECTS[0]


def _version_skew(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        load = fleet.load_time(replica)
        skewed = older_dialect(fleet.dialect)
        fleet.schedule(at, partial(fleet.crash, replica))
        fleet.schedule(at + load, partial(fleet.restart, replica, dialect=skewed))
        fleet.schedule(at + duration, partial(fleet.crash, replica))

        def back(t: float, r: Replica = replica) -> None:
            fleet.restart(r, t, fleet.dialect)

        fleet.schedule(at + duration + load, back)


def _lora_thrash(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in _by_model(fleet, targets).items():
        adapters = tuple(f"acme-ft-{k:02d}" for k in range(THRASH_ADAPTERS))
        demand = Demand("acme", model, "chat", 1.0, adapters, 1.0)
        wl = WORKLOADS["chat"]
        cfg = group[0].cfg
        rate = THRASH_LOAD * requests_per_second(cfg, wl.mean_prompt, wl.output.mean) * len(group)
        _pin(fleet, "lora", demand, wl, rate, group, at, duration)


def _mean(metric: str, direction: str = "up") -> Signal:
    return Signal(metric, "mean", direction)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("steady", "Diurnal traffic with ordinary bursts; nothing is wrong.",
                 "healthy", 600.0, (), lambda fleet: [], lambda *a: None),
        Scenario("traffic-burst", "Interactive tenants triple their traffic: queues build.",
                 "ttft.queue.load", 600.0,
                 (Signal("vllm:num_requests_waiting", "gauge", "up"),
                  _mean("vllm:request_queue_time_seconds"),
                  _mean("vllm:time_to_first_token_seconds")),
                 _first_model, _traffic_burst),
        Scenario("long-prompt-surge", "A RAG tenant starts sending long contexts: prefill "
                 "dominates and co-scheduled decodes slow down.",
                 "ttft.prefill.long_prompts", 600.0,
                 (_mean("vllm:request_prompt_tokens"),
                  _mean("vllm:request_prefill_time_seconds"),
                  _mean("vllm:time_to_first_token_seconds"),
                  _mean("vllm:inter_token_latency_seconds")),
                 _first_model, _long_prompt_surge),
        Scenario("kv-pressure", "A batch job with long prompts and outputs fills the KV cache: "
                 "preemptions and recomputation.",
                 "ttft.queue.kv_capacity", 600.0,
                 (Signal("vllm:kv_cache_usage_perc", "gauge", "up"),
                  Signal("vllm:num_preemptions_total", "rate", "up"),
                  Signal("vllm:num_requests_waiting_by_reason", "gauge", "up",
                         labels={"reason": "capacity"}),
                  _mean("vllm:request_time_per_output_token_seconds")),
                 _first, _kv_pressure),
        Scenario("cold-restart", "A rollout restarts the replicas one after another: counters "
                 "reset, prefix caches start empty.",
                 "ttft.prefill.cache_miss", 600.0,
                 (Signal("process_start_time_seconds", "changes", "present"),
                  Signal("vllm:prompt_tokens_total", "reset", "present"),
                  Signal("vllm:prefix_cache_hits_total", "ratio", "down",
                         denominator="vllm:prefix_cache_queries_total", peak="min"),
                  Signal("vllm:time_to_first_token_seconds", "mean", "up", peak="max")),
                 _first_model, _cold_restart),
        Scenario("tokenizer-saturation", "The API server's CPU is starved: tokenization queues "
                 "in the front end while the engine's queue and prefill stay flat.",
                 "ttft.frontend", 600.0,
                 (_mean("vllm:time_to_first_token_seconds"),
                  _mean("vllm:request_queue_time_seconds", "flat"),
                  _mean("vllm:request_prefill_time_seconds", "flat"),
                  Signal("process_cpu_seconds_total", "rate", "up")),
                 _first, _tokenizer_saturation),
        Scenario("gpu-throttle", "One replica's GPU slows down (power brake and heat): clocks "
                 "and power drop, its inter-token latency rises: a straggler.",
                 "tpot.straggler.gpu_throttle", 900.0,
                 (Signal("DCGM_FI_DEV_SM_CLOCK", "gauge", "down"),
                  Signal("DCGM_FI_DEV_POWER_USAGE", "gauge", "down"),
                  Signal("DCGM_FI_DEV_GPU_TEMP", "gauge", "up"),
                  _mean("vllm:inter_token_latency_seconds")),
                 _first, _gpu_throttle),
        Scenario("collective-degradation", "An NVLink in a tensor-parallel group degrades "
                 "(XID 74): every all-reduce slows and so does every token.",
                 "tpot.collective", 600.0,
                 (Signal("DCGM_FI_DEV_XID_ERRORS", "gauge", "up"),
                  _mean("vllm:inter_token_latency_seconds")),
                 _tp_group, _collective_degradation, _need_tp),
        Scenario("replica-down", "A replica's server dies; its port refuses connections until "
                 "it restarts.",
                 "availability.replica_down", 300.0,
                 (Signal("up", "up", "down"),
                  Signal("fleetscope_gateway_requests_total", "rate", "up", "gateway",
                         labels={"status": "5xx"}, within_s=60.0)),
                 _first, _replica_down),
        Scenario("version-skew", "One replica is rolled back to an older vLLM: its metric "
                 "names and buckets differ from the rest of the fleet.",
                 "inventory.version_skew", 900.0,
                 (Signal("vllm:gpu_cache_usage_perc", "present", "present"),),
                 _first, _version_skew),
        Scenario("lora-thrash", "A tenant's adapter working set outgrows max_loras: requests "
                 "wait as deferred while adapters swap.",
                 "ttft.queue.lora_deferred", 600.0,
                 (Signal("vllm:num_requests_waiting_by_reason", "gauge", "up",
                         labels={"reason": "deferred"}),
                  _mean("vllm:time_to_first_token_seconds")),
                 _lora, _lora_thrash, _need_lora),
    )
}  # fmt: skip


def install(
    fleet: FleetModel,
    name: str,
    *,
    at: float,
    duration: float | None = None,
    targets: list[int] | None = None,
) -> dict[str, Any]:
    """Inject scenario `name` into the fleet; returns its ground truth (without endpoints)."""
    if name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r} (choose from {', '.join(SCENARIOS)})")
    scenario = SCENARIOS[name]
    duration = scenario.duration_s if duration is None else duration
    if at < 0 or duration <= 0:
        raise ScenarioError(f"--at must be >= 0 and --duration > 0 (got {at:g} and {duration:g})")
    chosen = scenario.default_targets(fleet) if targets is None else list(targets)
    for i in chosen:
        if not 0 <= i < len(fleet.replicas):
            raise ScenarioError(
                f"replica {i} does not exist (the fleet has 0..{len(fleet.replicas) - 1})"
            )
    scenario.check_targets(fleet, chosen)
    if name == "version-skew" and fleet.dp > 1 and older_dialect(fleet.dialect) not in ("v1-0.10",):
        raise ScenarioError("version-skew with --dp needs a dialect that has the engine label")
    scenario.apply(fleet, chosen, at, duration)
    return {
        "incident": name,
        "description": scenario.description,
        "expected_triage_branch": scenario.branch,
        "window": {"start_offset_s": at, "end_offset_s": at + duration},
        "affected": chosen,
        "expected_signals": [asdict(s) for s in scenario.signals],
    }
