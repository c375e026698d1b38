"""`canary_plan`: for a supported leaf of the triage walk, one single-variable canary.

Each leaf turns exactly one knob on one small scope (one replica, one route, one gateway
instance), so a result can be pinned on the change. Values vLLM does not expose (its
`--max-num-seqs`, say) are its documented defaults, marked as such: the person running
the canary enters what the deployment uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from triage.canary.document import CanaryPlan
from triage.canary.sample import duration, sample_size
from triage.canary.types import BreachedObjective, CanaryScope, Gate, Knob
from triage.walk.types import NodeResult

__all__ = ["SUPPORTED_LEAVES", "BreachedObjective", "CanaryPlan", "canary_plan"]

# Above this many percentage points over the control's error ratio a canary rolls back.
ERROR_MARGIN = 0.01
# The error gate waits for this many requests: below it one failure moves the ratio > 1 pp.
ERROR_GATE_AFTER = 100
# FleetScope does not know how traffic splits across routes or gateway instances: the
# duration assumes this share and says so.
ASSUMED_ROUTE_SHARE = 0.10
NOT_EXPOSED = "not exposed by vLLM's metrics: enter the value your deployment uses"


@dataclass(frozen=True)
class _Context:
    node: NodeResult
    replicas: int  # of the model, at least 1

    @property
    def one_replica(self) -> CanaryScope:
        return CanaryScope(
            "replica",
            f"one replica of {self.replicas} (about {100 / self.replicas:.3g}% of the model's "
            "requests, as the router spreads them evenly)",
            1.0 / self.replicas,
        )

    @property
    def outlier(self) -> str:
        if self.node.replicas:
            return self.node.replicas[0]
        return "the outlier replica (the walk named none: take the worst in the replica table)"

    def drain(self, why: str) -> CanaryScope:
        return CanaryScope(
            "drain",
            f"{self.outlier} ({why}) is taken out of the router's rotation; the model's other "
            f"{self.replicas - 1} replica(s) serve all of its requests",
            1.0,
            self.node.replicas[:1],
            "The canary's figures are the remaining replicas', which see all the traffic.",
        )


def _route_scope(what: str) -> CanaryScope:
    return CanaryScope(
        "route" if what == "route" else "gateway_instance",
        f"one gateway {what}",
        ASSUMED_ROUTE_SHARE,
        share_note=(
            f"FleetScope does not see how traffic splits across gateway {what}s: the duration "
            f"assumes this one carries {ASSUMED_ROUTE_SHARE:.0%} of the model's requests; scale "
            f"it by {ASSUMED_ROUTE_SHARE:.0%} / the real share."
        ),
    )


def _load(c: _Context) -> tuple[Knob, CanaryScope]:
    knob = Knob(
        "replicas",
        "deployment (the model's replica set)",
        str(c.replicas),
        str(c.replicas + 1),
        f"Scale the model's replica set from {c.replicas} to {c.replicas + 1}; change nothing "
        "else in the deployment.",
    )
    scope = CanaryScope(
        "new_replica",
        f"one more replica: the new one takes about {100 / (c.replicas + 1):.3g}% of the "
        "model's requests once the router admits it",
        1.0 / (c.replicas + 1),
    )
    return knob, scope


def _kv_capacity(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("--max-num-seqs", "vLLM engine argument", "256", "192",
             "Lower --max-num-seqs by a quarter (256 to 192) on one replica, so fewer "
             "sequences hold KV blocks at once and admitted requests stop waiting for them.",
             f"256 is vLLM's default on most GPUs; the value is {NOT_EXPOSED}."),
        c.one_replica,
    )  # fmt: skip


def _lora_deferred(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("--max-loras", "vLLM engine argument", "1", "3",
             "Raise --max-loras by 2 (1 to 3) on one replica, so requests for other adapters "
             "are batched instead of deferred (keep --max-cpu-loras at least as high).",
             f"1 is vLLM's default; the value is {NOT_EXPOSED} (vllm:lora_requests_info shows "
             "max_lora when the replica exposes it)."),
        c.one_replica,
    )  # fmt: skip


def _long_prompts(c: _Context) -> tuple[Knob, CanaryScope]:
    # Routing long prompts to their own pool needs a pool and a router rule: two changes.
    # A smaller prefill chunk is one flag on one replica.
    return (
        Knob("--max-num-batched-tokens", "vLLM engine argument (chunked prefill on)", "8192",
             "4096",
             "Halve --max-num-batched-tokens (8192 to 4096) on one replica with chunked "
             "prefill enabled, so a long prompt's prefill is split into smaller steps and "
             "short prompts reach their first token between them.",
             "8192 is vLLM V1's default for the API server on data-centre GPUs; the value is "
             f"{NOT_EXPOSED}."),
        c.one_replica,
    )  # fmt: skip


def _cache_miss(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("traffic admission after a restart", "rollout / readiness", "immediately",
             "after warm-up",
             "Hold the rollout and warm one replica before it takes traffic: keep it out of "
             "the router until it has served a replay of recent prompts (prefix cache and "
             "compiled graphs warm)."),
        c.one_replica,
    )  # fmt: skip


def _frontend(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("--api-server-count", "vLLM server argument", "1", "2",
             "Run two API server processes (--api-server-count 2) on one replica, so "
             "tokenisation and HTTP handling stop queueing behind one process.",
             f"1 is vLLM's default; the value is {NOT_EXPOSED}."),
        c.one_replica,
    )  # fmt: skip


def _step_work(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("--max-num-seqs", "vLLM engine argument", "256", "192",
             "Lower --max-num-seqs by a quarter (256 to 192) on one replica, so each decode "
             "step carries fewer sequences and takes less time.",
             f"256 is vLLM's default on most GPUs; the value is {NOT_EXPOSED}."),
        c.one_replica,
    )  # fmt: skip


def _preemption(c: _Context) -> tuple[Knob, CanaryScope]:
    # More KV blocks stop preemption without cutting concurrency (--max-num-seqs would);
    # its current value is exposed, by vllm:cache_config_info.
    return (
        Knob("--gpu-memory-utilization", "vLLM engine argument", "0.90", "0.95",
             "Raise --gpu-memory-utilization from 0.90 to 0.95 on one replica, so its KV "
             "cache holds more blocks and running sequences stop being preempted.",
             "0.90 is vLLM's default; vllm:cache_config_info's gpu_memory_utilization label "
             "shows each replica's value: start from it and add 0.05, at most 0.95."),
        c.one_replica,
    )  # fmt: skip


def _gpu_throttle(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("router membership of the outlier", "router / load balancer", "serving",
             "drained", f"Drain {c.outlier} from the router; leave it running for the "
             "hardware team (clocks, power, temperature)."),
        c.drain("its GPU is throttled"),
    )  # fmt: skip


def _collective(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("router membership of the TP group", "router / load balancer", "serving",
             "drained", f"Drain {c.outlier}, whose tensor-parallel group has the failing "
             "link, from the router; leave it running for the link diagnosis."),
        c.drain("its tensor-parallel group has a failing link"),
    )  # fmt: skip


def _retry_storm(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("gateway retries", "gateway route retry policy", "your current policy",
             "at most 1 retry, with backoff",
             "Cap retries at one, with backoff, on one gateway route, so failed requests "
             "stop multiplying the load that made them fail.",
             "FleetScope does not read gateway configuration: enter the route's policy."),
        _route_scope("route"),
    )  # fmt: skip


def _gateway_errors(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("gateway configuration", "gateway instance", "the changed configuration",
             "the previous configuration",
             "Roll back the recent gateway change on one gateway instance only."),
        _route_scope("instance"),
    )  # fmt: skip


def _artifact_regression(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("model artifact", "deployment image / weights", "the new artifact",
             "the previous artifact",
             "Roll one replica back to the previous model artifact (weights, tokenizer and "
             "image as they were); keep the others on the new one as the control."),
        c.one_replica,
    )  # fmt: skip


def _version_skew(c: _Context) -> tuple[Knob, CanaryScope]:
    scope = c.one_replica
    scope = CanaryScope(scope.kind, f"{c.outlier}: {scope.description}", scope.share,
                        c.node.replicas[:1])  # fmt: skip
    return (
        Knob("vLLM version", "deployment image", "the skewed version", "the fleet's version",
             f"Roll {c.outlier} forward or back to the version the rest of the fleet runs."),
        scope,
    )  # fmt: skip


def _replica_down(c: _Context) -> tuple[Knob, CanaryScope]:
    return (
        Knob("replica", "platform (Kubernetes)", "down", "replaced",
             f"Replace {c.outlier}: restarting or rescheduling it is the platform's job, "
             "not a canary's."),
        CanaryScope("replica", f"{c.outlier} only", 1.0 / c.replicas, c.node.replicas[:1]),
    )  # fmt: skip


_LEAVES: dict[str, Callable[[_Context], tuple[Knob, CanaryScope]]] = {
    "ttft.queue.load": _load,
    "ttft.queue.kv_capacity": _kv_capacity,
    "ttft.queue.lora_deferred": _lora_deferred,
    "ttft.prefill.long_prompts": _long_prompts,
    "ttft.prefill.cache_miss": _cache_miss,
    "ttft.frontend": _frontend,
    "tpot.step_work": _step_work,
    "tpot.preemption": _preemption,
    "tpot.straggler.gpu_throttle": _gpu_throttle,
    "tpot.collective": _collective,
    "availability.replica_down": _replica_down,
    "availability.retry_storm": _retry_storm,
    "availability.gateway_errors": _gateway_errors,
    "quality.artifact_regression": _artifact_regression,
    "inventory.version_skew": _version_skew,
}
SUPPORTED_LEAVES = tuple(_LEAVES)
NO_CANARY = frozenset({"availability.replica_down"})

_COMPARE = {
    "replica": "the model's other replicas (the control) over the same window",
    "new_replica": "the model's existing replicas (the control) over the same window",
    "drain": "the drained replica's own figures in the incident window (the control): the "
    "remaining replicas must do better than it did, at their new load",
    "route": "the model's other routes (the control) over the same window",
    "gateway_instance": "the other gateway instances (the control) over the same window",
}


def _gates(
    objective: BreachedObjective, requests: int, quality_signal: bool
) -> tuple[tuple[Gate, ...], tuple[Gate, ...]]:
    reasons = " or ".join(objective.bad_finish_reasons)
    margin = (objective.observed_bad - objective.allowed_bad) / 2.0
    halfway = math.ceil(requests / 2)
    over = "over the threshold" if objective.kind != "success" else "finishing badly"
    success = [
        Gate("slo", f"The objective {objective.describe()} is met on the canary over at least "
             f"{requests} requests (all of its interval, when the threshold is not a bucket "
             "edge).", requests),
        Gate("errors", f"The canary's error ratio (finished_reason {reasons}) is not above "
             f"the control's (within {ERROR_MARGIN * 100:g} pp, the noise margin).", requests),
    ]  # fmt: skip
    rollback = [
        Gate("slo", f"After {halfway} requests (half the sample) the canary's share of "
             f"{objective.unit} {over} is above the control's by more than "
             f"{margin * 100:.3g} pp (half the change the canary has to show).", halfway),
        Gate("errors", f"The canary's error ratio is above the control's + "
             f"{ERROR_MARGIN * 100:g} pp (checked from {ERROR_GATE_AFTER} requests on).",
             ERROR_GATE_AFTER),
    ]  # fmt: skip
    if quality_signal:
        success.append(Gate("quality", "The prober's quality signal on the canary is not "
                            "below the control's.", requests))  # fmt: skip
        rollback.append(Gate("quality", "Any quality regression on the canary in the "
                             "prober's signal.", None))  # fmt: skip
    else:
        success.append(Gate("quality", "Quality unverified: no prober quality signal is "
                            "configured, so a faster but worse answer would pass the other "
                            "gates.", None))  # fmt: skip
        rollback.append(Gate("quality", "Any report of worse answers from the canary (no "
                             "quality signal is configured to catch it).", None))  # fmt: skip
    return tuple(success), tuple(rollback)


def canary_plan(
    leaf: str,
    *,
    node: NodeResult,
    model_name: str | None,
    replicas_in_model: int,
    request_rate_per_second: float | None,
    breached: BreachedObjective | None,
    quality_signal: bool,
) -> CanaryPlan | None:
    """One single-variable canary for `leaf`, or None when the leaf has no plan here, the
    walk did not support it, or no objective is breached (nothing to show a change in)."""
    build = _LEAVES.get(leaf)
    if build is None or breached is None or not breached.breached:
        return None
    if node.id != leaf:
        raise ValueError(f"canary_plan: the node is {node.id!r}, not the leaf {leaf!r}")
    if node.verdict != "supported":
        return None  # a canary for a cause the walk did not find would test a guess
    replicas = max(1, replicas_in_model)
    knob, scope = build(_Context(node, replicas))
    flags: list[str] = []
    if not quality_signal:
        flags.append("Quality unverified: no prober quality signal is configured; the "
                     "canary can only show latency and errors.")  # fmt: skip
    if scope.kind == "drain":
        flags.append(
            f"Draining moves its load onto {replicas - 1} replica(s): each takes about "
            f"{replicas / max(1, replicas - 1):.2g}x its share; watch their queues."
            if replicas > 1
            else "The model has one replica: draining it takes the model down. Add a "
            "replica first (a separate change) or fix the replica in place."
        )
    if leaf in NO_CANARY:
        return CanaryPlan(
            leaf, model_name, False, knob, scope, breached, None, None,
            "the model before the replica went down",
            (Gate("replaced", "The replacement replica is up (its scrapes succeed) and the "
                  f"objective {breached.describe()} is met on the model again."),),
            (), quality_signal, tuple(flags), node.reason,
        )  # fmt: skip
    sample = sample_size(breached)
    run = duration(
        sample.requests, request_rate_per_second=request_rate_per_second, share=scope.share
    )
    if run.minutes is None:
        flags.append("The model's request rate is unknown: the duration cannot be computed.")
    elif not run.within_hour:
        flags.append(
            f"Too little traffic to collect the sample within an hour ({run.minutes} min "
            "needed at the current rate)."
        )
    success, rollback = _gates(breached, sample.requests, quality_signal)
    return CanaryPlan(
        leaf, model_name, True, knob, scope, breached, sample, run, _COMPARE[scope.kind],
        success, rollback, quality_signal, tuple(flags), node.reason,
    )  # fmt: skip
