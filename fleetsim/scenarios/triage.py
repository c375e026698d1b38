"""Scenarios for the triage leaves beyond the first ones, and decoys a naive walk misreads:
a burst the engines absorb, and a straggler the fleet average hides."""

from __future__ import annotations

from fleetsim.scenarios import batches, machine, service, traffic
from fleetsim.scenarios import signals_text as why
from fleetsim.scenarios.model import (
    BY_REASON,
    GATEWAY_REQUESTS,
    GATEWAY_RETRIES,
    ITERATION_TOKENS,
    ITL,
    MODEL_LABEL,
    PREEMPTIONS,
    PROBER_CHECKS,
    QUEUE_TIME,
    REQUEST_TPOT,
    RUNNING,
    SUCCESS,
    TTFT,
    WAITING,
    Scenario,
    down,
    first,
    first_model,
    flat,
    not_up,
    up,
)

MODEL = {"model_name": MODEL_LABEL}
MODEL_5XX = {"model_name": MODEL_LABEL, "status": "5xx"}
CAPACITY = {"reason": "capacity"}

TRIAGE: tuple[Scenario, ...] = (
    Scenario("healthy-burst", "Interactive traffic rises by about half and the replicas "
             "absorb it: more requests, no queue, latency within its noise.",
             "healthy", 600.0,
             (up(SUCCESS, "rate", 0.2, 0.1, why.BURST_RATE),
              flat(TTFT, "mean", 0.25, 0.02, why.BURST_TTFT),
              flat(ITL, "mean", 0.25, 0.002, why.BURST_ITL)),
             first_model, traffic.healthy_burst),
    Scenario("step-work", "The batch limits are doubled on every replica of the model and a "
             "tenant's long answers fill the room: every step does more work, so every "
             "replica's inter-token latency rises alike.",
             "tpot.step_work", 600.0,
             (up(ITL, "mean", 0.2, 0.002, why.STEP_ITL, each=True),
              up(RUNNING, "gauge", 0.5, 5.0, why.STEP_RUNNING),
              up(ITERATION_TOKENS, "mean", 0.3, 5.0, why.STEP_TOKENS),
              not_up(PREEMPTIONS, "rate", 0.0, 0.005, why.STEP_NO_PREEMPT),
              not_up(BY_REASON, "gauge", 0.0, 1.0, why.STEP_NO_WAIT, labels=CAPACITY,
                     instead=not_up(WAITING, "gauge", 0.0, 1.0, why.STEP_NO_WAIT)),
              not_up(TTFT, "mean", 0.3, 0.01, why.STEP_TTFT)),
             first_model, traffic.step_work),
    Scenario("preemption", "A batch job sized to the whole KV cache shares the replica at a "
             "lower priority: near the end of each batch its answers outgrow the cache, so "
             "its newest sequences are preempted and recomputed; interactive requests are "
             "admitted first and wait only for the slower steps.",
             "tpot.preemption", 600.0,
             (up(PREEMPTIONS, "rate", 1.0, 0.01, why.PREEMPT_RATE),
              up(REQUEST_TPOT, "mean", 0.2, 0.002, why.PREEMPT_TPOT,
                 instead=up(ITL, "mean", 0.2, 0.002, why.PREEMPT_TPOT)),
              up(ITL, "mean", 0.2, 0.002, why.PREEMPT_TPOT),
              up("vllm:kv_cache_usage_perc", "gauge", 0.5, 0.3, why.PREEMPT_KV, aggregate="max"),
              up(BY_REASON, "gauge", 0.0, 0.5, why.PREEMPT_WAIT, labels=CAPACITY,
                 instead=up(WAITING, "gauge", 0.0, 0.5, why.PREEMPT_WAIT)),
              not_up(QUEUE_TIME, "mean", 0.0, 0.1, why.PREEMPT_QUEUE),
              not_up(TTFT, "mean", 0.5, 0.25, why.PREEMPT_TTFT)),
             first, batches.preemption),
    Scenario("retry-storm", "A brief slowdown pushes waits past the gateway's upstream "
             "timeout; the gateway and the clients retry, and the retries keep the queue "
             "long after the slowdown ends.",
             "availability.retry_storm", 600.0,
             (up(GATEWAY_REQUESTS, "rate", 0.0, 0.1, why.STORM_5XX, scope="gateway",
                 labels=MODEL_5XX),
              up(GATEWAY_RETRIES, "rate", 0.0, 0.3, why.STORM_RETRIES, scope="gateway",
                 labels=MODEL),
              not_up(SUCCESS, "rate", 0.15, 0.05, why.STORM_DONE,
                     labels={"finished_reason": "stop"}),
              up(WAITING, "gauge", 1.0, 5.0, why.STORM_QUEUE)),
             first_model, service.retry_storm),
    Scenario("gateway-errors", "The gateway's auth path fails part of the model's requests "
             "with 5xx before routing; the engines behind it are healthy.",
             "availability.gateway_errors", 600.0,
             (up(GATEWAY_REQUESTS, "rate", 0.0, 0.05, why.GATEWAY_5XX, scope="gateway",
                 labels=MODEL_5XX),
              flat(SUCCESS, "rate", 0.25, 0.05, why.GATEWAY_ENGINES),
              flat(TTFT, "mean", 0.25, 0.02, why.GATEWAY_LATENCY),
              flat(ITL, "mean", 0.15, 0.001, why.GATEWAY_LATENCY)),
             first_model, service.gateway_errors),
    Scenario("artifact-regression", "A bad model artifact reaches the model's replicas: "
             "answers get worse while latency and errors stay as they were.",
             "quality.artifact_regression", 600.0,
             (up(PROBER_CHECKS, "rate", 1.0, 0.005, why.ARTIFACT_FAILS, scope="prober",
                 labels={"model_name": MODEL_LABEL, "result": "fail"}),
              flat(TTFT, "mean", 0.25, 0.02, why.ARTIFACT_LATENCY),
              flat(ITL, "mean", 0.15, 0.001, why.ARTIFACT_LATENCY),
              not_up(GATEWAY_REQUESTS, "rate", 0.0, 0.02, why.ARTIFACT_ERRORS, scope="gateway",
                     labels=MODEL_5XX)),
             first_model, service.artifact_regression),
    Scenario("hidden-straggler", "One of several replicas of a model runs a milder GPU "
             "throttle: the model's average ITL barely moves, that replica's stands out.",
             "tpot.straggler.gpu_throttle", 900.0,
             (down("DCGM_FI_DEV_SM_CLOCK", "gauge", 0.2, 100.0, why.STRAGGLER_CLOCK,
                   aggregate="avg"),
              down("DCGM_FI_DEV_POWER_USAGE", "gauge", 0.1, 10.0, why.STRAGGLER_POWER),
              up(ITL, "mean", 0.12, 0.001, why.STRAGGLER_ITL),
              not_up(ITL, "mean", 0.15, 0.002, why.STRAGGLER_FLEET, scope="model")),
             first, machine.hidden_straggler, machine.need_peers),
)  # fmt: skip
