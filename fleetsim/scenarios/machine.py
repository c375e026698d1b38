"""Scenarios that change the machines and processes: clocks, links, crashes, restarts
and rollbacks of the affected replicas."""

from __future__ import annotations

from functools import partial

from fleetsim.config import DIALECTS_WITH_ENGINE_LABEL, older_dialect
from fleetsim.dcgm import DcgmExporter
from fleetsim.dialects import exposes
from fleetsim.fleet import FleetModel
from fleetsim.replica import Replica
from fleetsim.scenarios.model import ScenarioError, Signal, window
from fleetsim.stats import bucket_set

THROTTLED_CLOCK = 0.5
THROTTLED_MEMORY = 0.75
THROTTLE_HEAT_C = 24.0
DEGRADED_LINK = 0.2  # the failing hop's effective speed: replays, recoveries, PCIe detours
LINK_RECOVERY_SHARE = 0.8  # share of the time the failing NVLink spends in recovery
FAILING_LINK_GPUS = (0, 1)  # both ends of the failing link: the first two GPUs of rank 0
XID_NVLINK = 74


def tp_group(fleet: FleetModel) -> list[int]:
    return [r.index for r in fleet.replicas if r.cfg.tp > 1][:1]


def first_lora(fleet: FleetModel) -> list[int]:
    return [r.index for r in fleet.replicas if r.cfg.deployment.enable_lora][:1]


def need_tp(fleet: FleetModel, targets: list[int]) -> None:
    if not targets or any(fleet.replicas[i].cfg.tp < 2 for i in targets):
        raise ScenarioError(
            "collective-degradation needs replicas with tensor parallelism "
            "(replica 1 of the default layout has TP 4: use --replicas 2 or more)"
        )


def need_lora(fleet: FleetModel, targets: list[int]) -> None:
    if not targets or any(not fleet.replicas[i].cfg.deployment.enable_lora for i in targets):
        raise ScenarioError("lora-thrash needs LoRA-enabled replicas (Llama 8B ones)")


def cold_restart(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    stagger = duration / (len(targets) + 1)
    for j, i in enumerate(targets):
        replica = fleet.replicas[i]
        down = at + j * stagger
        fleet.schedule(down, partial(fleet.crash, replica))
        fleet.schedule(down + fleet.load_time(replica), partial(fleet.restart, replica))


def _slowed_gpus(
    fleet: FleetModel,
    targets: list[int],
    at: float,
    duration: float,
    *,
    clock: float,
    memory: float,
    heat_c: float,
) -> None:
    """The targets' GPUs run at `clock` and `memory` of their speed, `heat_c` warmer, for
    the window: a throttled GPU, or a straggler hidden among its peers."""
    for i in targets:
        replica, exporter = fleet.replicas[i], fleet.dcgm[i]

        def start(t: float, r: Replica = replica, e: DcgmExporter = exporter) -> None:
            r.set_knobs(clock_factor=clock, mem_factor=memory)
            e.temp_offset = heat_c

        def end(t: float, r: Replica = replica, e: DcgmExporter = exporter) -> None:
            r.set_knobs(clock_factor=1.0, mem_factor=1.0)
            e.temp_offset = 0.0

        window(fleet, at, duration, start, end)


def gpu_throttle(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    _slowed_gpus(fleet, targets, at, duration, clock=THROTTLED_CLOCK,
                 memory=THROTTLED_MEMORY, heat_c=THROTTLE_HEAT_C)  # fmt: skip


def collective_degradation(
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

        window(fleet, at, duration, start, end)


def replica_down(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        window(fleet, at, duration,
                partial(fleet.crash, replica),
                partial(fleet.restart, replica))  # fmt: skip


def skewed(dialect: str) -> str:
    older = older_dialect(dialect)
    if older is None:
        raise ScenarioError(f"{dialect} is the oldest dialect: there is nothing to roll back to")
    return older


def need_older(fleet: FleetModel, targets: list[int]) -> None:
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


def version_skew(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        load = fleet.load_time(replica)
        older = skewed(replica.cfg.dialect)
        fleet.schedule(at, partial(fleet.crash, replica))
        fleet.schedule(at + load, partial(fleet.restart, replica, dialect=older))
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


def skew_signals(dialect: str) -> tuple[Signal, ...]:
    older = skewed(dialect)
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


# hidden-straggler: a milder throttle than gpu-throttle, on one of several replicas of a
# model, so the model's average barely moves while that replica stands out.
STRAGGLER_CLOCK = 0.75
STRAGGLER_MEMORY = 0.87
STRAGGLER_HEAT_C = 12.0
STRAGGLER_MIN_PEERS = 4  # replicas of its model, itself included


def need_peers(fleet: FleetModel, targets: list[int]) -> None:
    for i in targets:
        model = fleet.replicas[i].cfg.model.served_name
        peers = len(fleet.replicas_of(model))
        if peers < STRAGGLER_MIN_PEERS:
            raise ScenarioError(
                f"hidden-straggler: replica {i} is one of {peers} {model} replicas; a "
                f"straggler hides among {STRAGGLER_MIN_PEERS} or more (use --replicas 7 or more)"
            )


def hidden_straggler(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    _slowed_gpus(fleet, targets, at, duration, clock=STRAGGLER_CLOCK,
                 memory=STRAGGLER_MEMORY, heat_c=STRAGGLER_HEAT_C)  # fmt: skip
