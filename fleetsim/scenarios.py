"""Incidents injected into a fleet at a time, on chosen replicas, with their ground truth.

Each scenario changes the simulation's inputs (traffic, machine knobs, process
lifecycle), never its outputs: the metrics move because the simulated requests
and GPUs behave differently. Intensities are sized from the affected replicas'
own configuration (and, where load matters, the traffic of the hour they start at)
so every scenario shows at any fleet size and time of day.

The ground truth names each expected signal as the affected replica really exposes
it (its dialect, its process layout), with thresholds that follow the physics of the
signal; `fleetsim.signals` checks them against a written history.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fleetsim.config import DIALECTS_WITH_ENGINE_LABEL, older_dialect
from fleetsim.dcgm import DcgmExporter
from fleetsim.dialects import exposed_name, exposes
from fleetsim.fleet import LOAD_FACTOR, Event, FleetModel
from fleetsim.replica import FRONTEND_BASE_S, FRONTEND_PER_TOKEN_S, Replica
from fleetsim.roofline import StepModel, requests_per_second
from fleetsim.stats import bucket_set
from fleetsim.workloads import (
    DEMANDS,
    WORKLOADS,
    Demand,
    Dist,
    Stream,
    Workload,
    diurnal,
    variant,
)

# A burst brings the targets' offered load to this multiple of their estimated capacity,
# whatever the hour: the daily curve decides how much extra traffic that takes.
BURST_TOTAL_LOAD = 1.9
BURST_MIN_EXTRA = 0.5  # and it always adds at least half the capacity on top
TOKENIZER_UTILIZATION = 1.15  # the starved front end needs 115% of its CPU at that hour
SURGE_PREFILL_SHARE = 0.3  # long prompts take this share of the targets' prefill capacity
KV_OVERSUBSCRIPTION = 1.4  # the batch job wants this many times the sequences KV can hold
THRASH_LOAD = 0.25  # adapter traffic as a share of the targets' chat capacity
THROTTLED_CLOCK = 0.5
THROTTLED_MEMORY = 0.75
THROTTLE_HEAT_C = 24.0
DEGRADED_LINK = 0.2  # the failing hop's effective speed: replays, recoveries, PCIe detours
LINK_RECOVERY_SHARE = 0.8  # share of the time the failing NVLink spends in recovery
FAILING_LINK_GPUS = (0, 1)  # both ends of the failing link: the first two GPUs of rank 0
XID_NVLINK = 74
THRASH_ADAPTERS = 16


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
    scope: str = "affected"  # affected replicas, or the gateway
    labels: dict[str, str] = field(default_factory=dict)
    denominator: str | None = None
    within_s: float | None = None  # only the first seconds of the window show it
    peak: str | None = None  # "min"/"max": a brief dip or spike on any affected replica
    gpus: tuple[int, ...] = ()  # DCGM: one check per listed GPU of the replica (by UUID)
    aggregate: str = "sum"  # gauges: over series and replicas (sum), or per replica (max/avg)
    instead: Signal | None = None  # what a replica that lacks `metric` shows instead


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
}


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
            follow_diurnal=False,  # sized for its window, not for the hour it starts at
        )
    )


def _window(fleet: FleetModel, at: float, duration: float, start: Callable[[float], None],
            end: Callable[[float], None]) -> None:  # fmt: skip
    fleet.schedule(at, start)
    fleet.schedule(at + duration, end)


def _traffic_burst(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    daily = diurnal(fleet.epoch + at)  # what the baseline traffic is at that hour
    extra_load = max(BURST_MIN_EXTRA, BURST_TOTAL_LOAD - LOAD_FACTOR * daily)
    for model, group in _by_model(fleet, targets).items():
        demands = [d for d in DEMANDS if d.model == model and d.workload in ("chat", "rag")]
        share = sum(d.share for d in demands)
        prompt = sum(d.share * WORKLOADS[d.workload].mean_prompt for d in demands) / share
        output = sum(d.share * WORKLOADS[d.workload].output.mean for d in demands) / share
        capacity = sum(r.cfg.dp * requests_per_second(r.cfg, prompt, output) for r in group)
        for d in demands:
            rate = extra_load * capacity * d.share / share
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
        # The traffic it gets at that hour: the front end saturates at night too.
        per_replica = rate * diurnal(fleet.epoch + at) / len(fleet.replicas_of(model))
        per_replica /= replica.cfg.dp
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
            r.set_knobs(link_factor=DEGRADED_LINK, link_ranks=(0,))  # the link is in rank 0
            e.set_xid(XID_NVLINK, list(FAILING_LINK_GPUS))  # both ends of the failing link
            e.set_link_fault(LINK_RECOVERY_SHARE, list(FAILING_LINK_GPUS))

        def end(t: float, r: Replica = replica, e: DcgmExporter = exporter) -> None:
            r.set_knobs(link_factor=1.0, link_ranks=None)
            e.set_link_fault(0.0, list(FAILING_LINK_GPUS))  # the XID gauge keeps the last XID

        _window(fleet, at, duration, start, end)


def _replica_down(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        _window(fleet, at, duration,
                partial(fleet.crash, replica),
                partial(fleet.restart, replica))  # fmt: skip


def _skewed(dialect: str) -> str:
    older = older_dialect(dialect)
    if older is None:
        raise ScenarioError(f"{dialect} is the oldest dialect: there is nothing to roll back to")
    return older


def _need_older(fleet: FleetModel, targets: list[int]) -> None:
    for i in targets:
        cfg = fleet.replicas[i].cfg
        older = older_dialect(cfg.dialect)
        if older is None:
            raise ScenarioError(
                f"version-skew: replica {i} already runs the oldest dialect ({cfg.dialect}), "
                "so there is no older vLLM to roll it back to"
            )
        if cfg.dp > 1 and older not in DIALECTS_WITH_ENGINE_LABEL:
            raise ScenarioError(
                f"version-skew: replica {i} runs {cfg.dialect} with --dp {cfg.dp}, and the next "
                f"older dialect ({older}) has no engine label to serve data-parallel engines"
            )


def _version_skew(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        load = fleet.load_time(replica)
        skewed = _skewed(replica.cfg.dialect)
        fleet.schedule(at, partial(fleet.crash, replica))
        fleet.schedule(at + load, partial(fleet.restart, replica, dialect=skewed))
        fleet.schedule(at + duration, partial(fleet.crash, replica))
        fleet.schedule(
            at + duration + load, partial(fleet.restart, replica, dialect=replica.cfg.dialect)
        )


# What a rollback shows, most telling first: families only the older dialect has, and
# families the newer one had that disappear.
SKEW_APPEARS = (
    "vllm:gpu_cache_usage_perc",
    "vllm:time_per_output_token_seconds",
    "vllm:num_requests_swapped",
    "vllm:time_in_queue_requests",
    "vllm:gpu_prefix_cache_hit_rate",
)
SKEW_DISAPPEARS = (
    "vllm:num_requests_waiting_by_reason",
    "vllm:kv_cache_usage_perc",
    "vllm:inter_token_latency_seconds",
    "vllm:prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_queries_total",
)
SKEW_WHY = ("a family exists in one dialect and not the other: every scrape of the rolled-back "
            "process shows it, or none does")  # fmt: skip


def _skew_signals(dialect: str) -> tuple[Signal, ...]:
    older = _skewed(dialect)
    out = []
    appears = [n for n in SKEW_APPEARS if exposes(older, n) and not exposes(dialect, n)]
    gone = [n for n in SKEW_DISAPPEARS if exposes(dialect, n) and not exposes(older, n)]
    if appears:
        out.append(Signal(appears[0], "present", "present", why=SKEW_WHY))
    if gone:
        out.append(Signal(gone[0], "absent", "absent", why=SKEW_WHY))
    if dialect in DIALECTS_WITH_ENGINE_LABEL and older not in DIALECTS_WITH_ENGINE_LABEL:
        out.append(
            Signal(
                "vllm:num_requests_running",
                "absent",
                "absent",
                labels={"engine": "0"},
                why="builds before data-parallel AsyncLLM have no engine label",
            )
        )
    if bucket_set(dialect, 1, 1).ttft != bucket_set(older, 1, 1).ttft:
        last = f"{bucket_set(dialect, 1, 1).ttft[-1]:.1f}"
        out.append(
            Signal(
                "vllm:time_to_first_token_seconds_bucket",
                "absent",
                "absent",
                labels={"le": last},
                why="builds before 2025-04-07 stop TTFT buckets at 10 s",
            )
        )
    return tuple(out)


def _lora_thrash(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in _by_model(fleet, targets).items():
        adapters = tuple(f"acme-ft-{k:02d}" for k in range(THRASH_ADAPTERS))
        demand = Demand("acme", model, "chat", 1.0, adapters, 1.0)
        wl = WORKLOADS["chat"]
        cfg = group[0].cfg
        rate = THRASH_LOAD * requests_per_second(cfg, wl.mean_prompt, wl.output.mean) * len(group)
        _pin(fleet, "lora", demand, wl, rate, group, at, duration)


# Why each threshold is what it is (the physics the simulation follows).
QUEUE_GROWS = (
    "offered load is about twice what the replicas can serve, so the queue grows "
    "for the whole window: waiting requests go from none or a few to dozens"
)
QUEUE_WAIT = (
    "an FCFS queue fed about twice its service rate grows all window: the mean wait "
    "reaches hundreds of milliseconds within minutes, against milliseconds before"
)
TTFT_QUEUE = "TTFT contains the queue wait, so it grows by at least as much"
SURGE_PROMPT = (
    "5-12 % of requests become ~12k-token prompts against a mix averaging 3-4k; "
    "bursts of short chat requests dilute them, so the mean rises by a tenth or more"
)
SURGE_PREFILL = "prefill time grows with prompt length (compute-bound chunks)"
SURGE_ITL = (
    "decodes share each step's token budget with long prefill chunks, so every step "
    "and every inter-token gap gets longer"
)
KV_FULL = (
    "the batch job's sequences need more KV than the cache holds: usage sits near 1, "
    "against well under half before"
)
KV_PREEMPT = "decode growth runs out of KV blocks, so the scheduler preempts: from none to many"
KV_WAIT = "requests whose prompt's KV does not fit wait for space (reason capacity)"
KV_TPOT = (
    "bigger batches of long contexts make each decode step slower, and a preempted "
    "request's recompute shows as one long gap"
)
RESTART_UP = "a restarting process refuses connections while it loads weights (a minute or more)"
RESTART_START = "each new process has a new start time"
RESTART_RESET = "a new process counts from zero"
RESTART_HITS = (
    "a restarted engine's prefix cache starts empty: the first scrape interval after "
    "it serves again sees far fewer hits"
)
RESTART_TTFT = "requests to a cold engine miss the cache and queue behind its warm-up"
FRONTEND_TTFT = "tokenization queues in the starved API server before the engine sees a request"
FRONTEND_ENGINE = (
    "the starved front end releases requests to the engine more slowly and evenly "
    "spaced, so the engine's queue and prefill can only stay or shrink; it may "
    "not rise by more than half (or 50 ms)"
)
FRONTEND_CPU = "the tokenizer runs at its CPU ceiling"
THROTTLE_CLOCK = "the SM clock is halved"
THROTTLE_POWER = "dynamic power goes with clock x voltage squared: it falls by more than a third"
THROTTLE_TEMP = (
    "temperature is in degrees, not a ratio: cooling trouble lifts it by well over "
    "5 C even though power falls (a 20 % rule fails a 17 % rise of a valid incident)"
)
THROTTLE_ITL = (
    "decode is memory-bound and memory runs at 75 %: the GPU part of each step "
    "grows by a third, its fixed CPU part (~2 ms) does not, so ITL rises 15-30 %"
)
LINK_XID = "XID 74 (NVLink error) is reported on both ends of the failing link"
LINK_ERRORS = "a healthy NVLink counts no CRC errors; the failing one counts some every second"
LINK_RECOVERY = "the failing link drops into recovery every ~20 s; a healthy one never does"
LINK_BYTES = (
    "half of each end's peer traffic crossed the failing link, and it spends most of "
    "the time in recovery (the hop goes over PCIe meanwhile): NVLink bytes fall by "
    "~40 %, against swings of ~20 % from traffic"
)
LINK_PCIE = "the detoured hop adds GB/s to a PCIe link that otherwise carries MB/s"
LINK_ITL = "every decode step runs two all-reduces per layer over the failing hop"
DOWN_UP = "a dead server refuses every scrape"
DOWN_5XX = (
    "requests in flight on the dead replica are lost (5xx) in its first seconds; the "
    "series appears at its first increment, so it counts from 0"
)
LORA_WAIT = "requests whose adapter has no LoRA slot wait as deferred: from none to several"
LORA_TTFT = "deferred requests wait for a slot, and adapter loads stall steps"


def _up(metric: str, kind: str, rel: float, delta: float, why: str, **more: Any) -> Signal:
    return Signal(metric, kind, "up", rel, delta, why, **more)


def _down(metric: str, kind: str, rel: float, delta: float, why: str, **more: Any) -> Signal:
    return Signal(metric, kind, "down", rel, delta, why, **more)


TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
WAITING = "vllm:num_requests_waiting"
BY_REASON = "vllm:num_requests_waiting_by_reason"

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("steady", "Diurnal traffic with ordinary bursts; nothing is wrong.",
                 "healthy", 600.0, (), lambda fleet: [], lambda *a: None),
        Scenario("traffic-burst", "Interactive tenants flood the model with about twice what "
                 "its replicas can serve: queues build.",
                 "ttft.queue.load", 600.0,
                 (_up(WAITING, "gauge", 1.0, 5.0, QUEUE_GROWS),
                  _up("vllm:request_queue_time_seconds", "mean", 1.0, 0.1, QUEUE_WAIT),
                  _up(TTFT, "mean", 0.5, 0.1, TTFT_QUEUE)),
                 _first_model, _traffic_burst),
        Scenario("long-prompt-surge", "A RAG tenant starts sending long contexts: prefill "
                 "dominates and co-scheduled decodes slow down.",
                 "ttft.prefill.long_prompts", 600.0,
                 (_up("vllm:request_prompt_tokens", "mean", 0.1, 300.0, SURGE_PROMPT),
                  _up("vllm:request_prefill_time_seconds", "mean", 0.3, 0.05, SURGE_PREFILL),
                  _up(TTFT, "mean", 0.3, 0.05, SURGE_PREFILL),
                  _up(ITL, "mean", 0.15, 0.002, SURGE_ITL)),
                 _first_model, _long_prompt_surge),
        Scenario("kv-pressure", "A batch job with long prompts and outputs fills the KV cache: "
                 "preemptions and recomputation.",
                 "ttft.queue.kv_capacity", 600.0,
                 (_up("vllm:kv_cache_usage_perc", "gauge", 0.5, 0.3, KV_FULL, aggregate="max"),
                  _up("vllm:num_preemptions_total", "rate", 1.0, 0.01, KV_PREEMPT),
                  _up(BY_REASON, "gauge", 1.0, 1.0, KV_WAIT, labels={"reason": "capacity"},
                      instead=_up(WAITING, "gauge", 1.0, 1.0, KV_WAIT)),
                  _up("vllm:request_time_per_output_token_seconds", "mean", 0.2, 0.002, KV_TPOT,
                      instead=_up(ITL, "mean", 0.2, 0.002, KV_TPOT))),
                 _first, _kv_pressure),
        Scenario("cold-restart", "A rollout restarts the replicas one after another: counters "
                 "reset, prefix caches start empty.",
                 "ttft.prefill.cache_miss", 600.0,
                 (_down("up", "up", 0.0, 0.5, RESTART_UP, peak="min"),
                  Signal("process_start_time_seconds", "changes", "present", why=RESTART_START),
                  Signal("vllm:prompt_tokens_total", "reset", "present", why=RESTART_RESET),
                  _down("vllm:prefix_cache_hits_total", "ratio", 0.2, 0.02, RESTART_HITS,
                        denominator="vllm:prefix_cache_queries_total", peak="min",
                        instead=_down("vllm:gpu_prefix_cache_hit_rate", "gauge", 0.2, 0.02,
                                      RESTART_HITS, peak="min", aggregate="avg")),
                  _up(TTFT, "mean", 0.5, 0.05, RESTART_TTFT, peak="max")),
                 _first_model, _cold_restart),
        Scenario("tokenizer-saturation", "The API server's CPU is starved: tokenization queues "
                 "in the front end while the engine's queue and prefill stay flat.",
                 "ttft.frontend", 600.0,
                 (_up(TTFT, "mean", 0.5, 0.1, FRONTEND_TTFT),
                  Signal("vllm:request_queue_time_seconds", "mean", "not_up", 0.5, 0.05,
                         FRONTEND_ENGINE),
                  Signal("vllm:request_prefill_time_seconds", "mean", "not_up", 0.5, 0.05,
                         FRONTEND_ENGINE),
                  _up("process_cpu_seconds_total", "rate", 0.3, 0.05, FRONTEND_CPU)),
                 _first, _tokenizer_saturation),
        Scenario("gpu-throttle", "One replica's GPU slows down (power brake and heat): clocks "
                 "and power drop, its inter-token latency rises: a straggler.",
                 "tpot.straggler.gpu_throttle", 900.0,
                 (_down("DCGM_FI_DEV_SM_CLOCK", "gauge", 0.3, 100.0, THROTTLE_CLOCK,
                        aggregate="avg"),
                  _down("DCGM_FI_DEV_POWER_USAGE", "gauge", 0.2, 20.0, THROTTLE_POWER),
                  _up("DCGM_FI_DEV_GPU_TEMP", "gauge", 0.0, 5.0, THROTTLE_TEMP, aggregate="avg"),
                  _up(ITL, "mean", 0.1, 0.001, THROTTLE_ITL)),
                 _first, _gpu_throttle),
        Scenario("collective-degradation", "An NVLink in a tensor-parallel group degrades "
                 "(XID 74, CRC errors, replays, recoveries): every all-reduce slows and so "
                 "does every token.",
                 "tpot.collective", 600.0,
                 (_up("DCGM_FI_DEV_XID_ERRORS", "gauge", 0.0, 50.0, LINK_XID),
                  _up("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "rate", 0.0, 0.01,
                      LINK_ERRORS),
                  _up("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "rate", 0.0, 0.005,
                      LINK_ERRORS),
                  _up("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "rate", 0.0, 0.01,
                      LINK_ERRORS),
                  _up("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "rate", 0.0, 0.02,
                      LINK_RECOVERY),
                  _down("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "rate", 0.2, 0.0, LINK_BYTES,
                        gpus=FAILING_LINK_GPUS),
                  _up("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", 1.0, 1e7, LINK_PCIE),
                  _up(ITL, "mean", 0.1, 0.001, LINK_ITL)),
                 _tp_group, _collective_degradation, _need_tp),
        Scenario("replica-down", "A replica's server dies; its port refuses connections until "
                 "it restarts.",
                 "availability.replica_down", 300.0,
                 (_down("up", "up", 0.0, 0.5, DOWN_UP),
                  _up("fleetscope_gateway_requests_total", "rate", 0.0, 0.02, DOWN_5XX,
                      scope="gateway", labels={"status": "5xx"}, within_s=60.0)),
                 _first, _replica_down),
        Scenario("version-skew", "One replica is rolled back to the next older vLLM: its "
                 "metric names and buckets differ from the rest of the fleet.",
                 "inventory.version_skew", 900.0, (),
                 _first, _version_skew, _need_older,
                 incident_dialect=_skewed, signals_of=_skew_signals),
        Scenario("lora-thrash", "A tenant's adapter working set outgrows max_loras: requests "
                 "wait as deferred while adapters swap.",
                 "ttft.queue.lora_deferred", 600.0,
                 (_up(BY_REASON, "gauge", 1.0, 1.0, LORA_WAIT, labels={"reason": "deferred"},
                      instead=_up(WAITING, "gauge", 1.0, 1.0, LORA_WAIT)),
                  _up(TTFT, "mean", 0.3, 0.05, LORA_TTFT)),
                 _lora, _lora_thrash, _need_lora),
    )
}  # fmt: skip


def expected_signals(
    fleet: FleetModel, scenario: Scenario, targets: list[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(signals, unobservable) of the manifest, named as each affected replica exposes them.

    Replicas that expose a signal under the same name share one entry (`replicas` lists
    them); a replica that exposes nothing like it is listed under `unobservable`.
    """
    entries: dict[str, dict[str, Any]] = {}
    missing: dict[str, dict[str, Any]] = {}
    for i in targets:
        replica = fleet.replicas[i]
        cfg = replica.cfg
        if scenario.signals_of is not None:
            signals, dialect = scenario.signals_of(cfg.dialect), None
        else:
            signals, dialect = scenario.signals, scenario.incident_dialect(cfg.dialect)
        for signal in signals:
            for entry in _resolve(signal, dialect, replica):
                if entry.get("unobservable"):
                    slot = missing.setdefault(entry["key"], {**entry, "replicas": []})
                else:
                    slot = entries.setdefault(
                        json.dumps(entry, sort_keys=True), {**entry, "replicas": []}
                    )
                slot["replicas"].append(i)
    return list(entries.values()), list(missing.values())


def _resolve(signal: Signal, dialect: str | None, replica: Replica) -> list[dict[str, Any]]:
    """One manifest entry per checked series set: the signal as this replica exposes it."""
    multiprocess = replica.multiprocess
    metric: str | None = signal.metric
    denominator = signal.denominator
    if dialect is not None:
        metric = exposed_name(signal.metric, dialect, multiprocess=multiprocess)
        if denominator is not None:
            denominator = exposed_name(denominator, dialect, multiprocess=multiprocess)
        if metric is None or (signal.denominator is not None and denominator is None):
            if signal.instead is not None:
                return _resolve(signal.instead, dialect, replica)
            layout = f"{dialect} with --dp {replica.cfg.dp}" if multiprocess else dialect
            why = f"{layout} does not expose {signal.metric} or a like metric"
            return [{"key": signal.metric, "unobservable": True, "why": why}]
    assert metric is not None
    entry: dict[str, Any] = {
        "metric": metric,
        "key": signal.metric,
        "catalog_key": CATALOG_KEYS.get(metric),
        "kind": signal.kind,
        "direction": signal.direction,
        "rel": signal.rel,
        "delta": signal.delta,
        "why": signal.why,
        "scope": signal.scope,
        "labels": dict(signal.labels),
        "denominator": denominator,
        "within_s": signal.within_s,
        "peak": signal.peak,
        "aggregate": signal.aggregate,
    }
    if not signal.gpus:
        return [entry]
    gpus = replica.cfg.gpus
    return [{**entry, "labels": {**entry["labels"], "UUID": gpus[pos].uuid}}
            for pos in signal.gpus if pos < len(gpus)]  # fmt: skip


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
    signals, unobservable = expected_signals(fleet, scenario, chosen)
    scenario.apply(fleet, chosen, at, duration)
    return {
        "incident": name,
        "description": scenario.description,
        "expected_triage_branch": scenario.branch,
        "window": {"start_offset_s": at, "end_offset_s": at + duration},
        "affected": chosen,
        "incident_dialects": {
            i: scenario.incident_dialect(fleet.replicas[i].cfg.dialect) for i in chosen
        },
        "expected_signals": signals,
        "unobservable_signals": unobservable,
    }
