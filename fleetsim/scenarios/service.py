"""Scenarios in front of and behind the engines: the gateway's configuration and the
model artifact's quality. The engines' own latency model is untouched."""

from __future__ import annotations

from fleetsim.fleet import FleetModel
from fleetsim.replica import Replica
from fleetsim.roofline import STEP_CPU_S, StepModel
from fleetsim.scenarios.model import by_model, knobs, window
from fleetsim.workloads import DEMANDS, WORKLOADS, Stream, diurnal

# retry-storm: the gateway abandons an attempt not started within this long and retries
# it upstream this many times; the model's clients retry its 504s after a fixed second,
# this many attempts in all (a hand-rolled retry loop, not the SDK's backoff).
UPSTREAM_TIMEOUT_S = 5.0
UPSTREAM_RETRIES = 1
CLIENT_ATTEMPTS = 8
CLIENT_BACKOFF_S = 1.0
# The trigger: the model's replicas slow down for this long, to this share of the load
# they get at that hour (so the queue outgrows the timeout within seconds at any hour).
TRIGGER_S = 300.0
TRIGGER_CAPACITY = 0.5
# gateway-errors: the gateway's auth path fails this share of the model's requests.
GATEWAY_ERROR_SHARE = 0.3
# artifact-regression: the bad artifact answers this share of what the good one did. The
# prober checks a model once per 30 s, so a baseline holds ~8 checks and a window ~10-18,
# each of a different golden item: at half the quality some seeds' windows drew mostly
# easy items and failed no more than before (seed 2: 2/8 -> 7/18); at a quarter, every
# window's failures at least double (a broken artifact: wrong tokenizer, template or weights).
BAD_ARTIFACT_QUALITY = 0.25


def _brake(fleet: FleetModel, model: str, group: list[Replica], at: float) -> float:
    """The clock share at which the model's replicas, even at their batch limit, serve only
    TRIGGER_CAPACITY of the tokens that hour's traffic asks of them (a power brake: clocks
    fall to a few hundred MHz). Batching absorbs milder slowdowns without any queue."""
    daily = diurnal(fleet.epoch + at)
    tokens = 0.0
    for d in DEMANDS:
        if d.model == model:
            rate = fleet.base_rates.get((d.tenant, d.model, d.workload), 0.0)
            tokens += (
                rate * (WORKLOADS[d.workload].turns_mean or 1.0) * WORKLOADS[d.workload].output.mean
            )
    per_replica = tokens * daily / sum(r.cfg.dp for r in group)
    cfg = group[0].cfg
    batch = cfg.deployment.max_num_seqs
    ctx = min(2000.0, 0.9 * cfg.kv_tokens / batch)
    _, gpu, *_ = StepModel(cfg).cost(batch, batch * ctx, 0, 0.0)
    step = batch / (TRIGGER_CAPACITY * per_replica)  # the step time that serves that little
    return min(0.5, max(0.01, gpu / max(step - STEP_CPU_S, 1e-6)))


def retry_storm(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    gateway = fleet.gateway
    for model, group in by_model(fleet, targets).items():
        slow = _brake(fleet, model, group, at)
        clients = [s for s in fleet.streams if s.demand.model == model]

        def policy_on(t: float, m: str = model, streams: list[Stream] = clients) -> None:
            gateway.upstream_policy[m] = (UPSTREAM_TIMEOUT_S, UPSTREAM_RETRIES)
            for stream in streams:
                stream.retry_policy = (CLIENT_ATTEMPTS, CLIENT_BACKOFF_S)

        def policy_off(t: float, m: str = model, streams: list[Stream] = clients) -> None:
            gateway.upstream_policy.pop(m, None)
            for stream in streams:
                stream.retry_policy = None

        window(fleet, at, duration, policy_on, policy_off)
        for replica in group:
            window(fleet, at, min(TRIGGER_S, duration),
                   knobs(replica, clock_factor=slow, mem_factor=slow),
                   knobs(replica, clock_factor=1.0, mem_factor=1.0))  # fmt: skip


def gateway_errors(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    gateway = fleet.gateway
    for model in by_model(fleet, targets):

        def fail(t: float, m: str = model) -> None:
            gateway.error_share[m] = GATEWAY_ERROR_SHARE

        def heal(t: float, m: str = model) -> None:
            gateway.error_share.pop(m, None)

        window(fleet, at, duration, fail, heal)


def artifact_regression(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        worse = BAD_ARTIFACT_QUALITY * replica.cfg.model.quality
        window(fleet, at, duration,
               knobs(replica, answer_quality=worse),
               knobs(replica, answer_quality=None))  # fmt: skip
