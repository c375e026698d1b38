"""The triage tree as data: every node's question, the statistics it reads, the
thresholds that decide it and the runbook it links. The checks that turn evidence into
verdicts live in `triage.walk.checks`, one function per node, named in `check`.

    SLO breach -> TTFT or TPOT?  (or availability, quality, inventory)
      TTFT -> queue (load | KV capacity | LoRA deferred) | frontend | prefill (long
              prompts | cache miss / cold state)
      TPOT -> step work | preemption | straggler (GPU throttle) | collective
      availability -> replica down | retry storm | gateway errors
      quality -> artifact regression;  inventory -> version skew

Leaf identifiers are the simulator's `expected_triage_branch` names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    id: str
    parent: str
    question: str
    reads: tuple[str, ...]  # evidence statistics (triage.walk.evidence names)
    thresholds: tuple[str, ...]  # keys of triage.walk.thresholds.THRESHOLDS
    leaf: bool = False

    @property
    def runbook(self) -> str:
        return self.id.replace(".", "-") if self.leaf else ""


def _n(
    id: str,
    parent: str,
    question: str,
    reads: tuple[str, ...] = (),
    thresholds: tuple[str, ...] = (),
    leaf: bool = False,
) -> Node:
    return Node(id, parent, question, reads, thresholds, leaf)


NODES: tuple[Node, ...] = (
    _n(
        "ttft",
        "",
        "Is time to first token breached, on which replicas?",
        ("ttft_mean", "ttft_p95", "ttft_trend", "requests"),
        ("ttft_breach",),
    ),
    _n(
        "ttft.queue",
        "ttft",
        "Does engine queue time explain the TTFT rise?",
        ("queue_mean", "ttft_mean"),
        ("queue_share",),
    ),
    _n(
        "ttft.queue.kv_capacity",
        "ttft.queue",
        "Is the queue waiting for KV blocks (usage near 1, reason=capacity, preemptions)?",
        ("kv_usage", "waiting_capacity", "preemptions"),
        ("kv_full", "capacity_waiting", "preemptions"),
        leaf=True,
    ),
    _n(
        "ttft.queue.lora_deferred",
        "ttft.queue",
        "Is the queue waiting for LoRA adapter slots (reason=deferred)?",
        ("waiting_deferred",),
        ("deferred_waiting",),
        leaf=True,
    ),
    _n(
        "ttft.queue.load",
        "ttft.queue",
        "Did more work arrive than the model's replicas serve (arrivals up, queue on "
        "every replica)?",
        ("request_rate", "waiting"),
        ("request_rate",),
        leaf=True,
    ),
    _n(
        "ttft.frontend",
        "ttft",
        "Is the time before the engine (tokenization, API server) growing: TTFT up, queue "
        "and prefill flat, API-server CPU up?",
        ("ttft_mean", "queue_mean", "prefill_mean", "cpu_rate"),
        ("frontend_share", "cpu_rate"),
        leaf=True,
    ),
    _n(
        "ttft.prefill",
        "ttft",
        "Does prefill (or a cold prefix cache) explain the rise?",
        ("prefill_mean", "prefix_trend"),
        ("prefill_share",),
    ),
    _n(
        "ttft.prefill.long_prompts",
        "ttft.prefill",
        "Did longer prompts arrive?",
        ("prompt_mean", "prefill_mean"),
        ("prompt_tokens", "prefill_share"),
        leaf=True,
    ),
    _n(
        "ttft.prefill.cache_miss",
        "ttft.prefill",
        "Did replicas restart cold (new process, counter resets) and lose prefix hits?",
        ("prefix_trend", "prefix_ratio"),
        ("prefix_hit_drop",),
        leaf=True,
    ),
    _n(
        "tpot",
        "",
        "Is inter-token latency breached, on which replicas?",
        ("itl_mean", "tpot_mean"),
        ("itl_breach", "itl_outlier"),
    ),
    _n(
        "tpot.step_work",
        "tpot",
        "Did every replica of the model slow alike while the batch grew?",
        ("itl_mean", "running", "step_tokens"),
        ("itl_alike", "itl_alike_spread", "batch_growth"),
        leaf=True,
    ),
    _n(
        "tpot.preemption",
        "tpot",
        "Do preemptions (recompute) stretch the decode while KV is full?",
        ("preemptions", "kv_usage", "itl_mean"),
        ("preemptions", "kv_full"),
        leaf=True,
    ),
    _n(
        "tpot.straggler",
        "tpot",
        "Is one replica far slower than its peers?",
        ("itl_mean",),
        ("itl_outlier",),
    ),
    _n(
        "tpot.straggler.gpu_throttle",
        "tpot.straggler",
        "Did that replica's GPUs lose clock and power (a power or thermal brake)?",
        ("sm_clock", "power"),
        ("sm_clock_drop", "power_drop"),
        leaf=True,
    ),
    _n(
        "tpot.collective",
        "tpot",
        "Is a tensor-parallel group's link failing (XID, NVLink traffic down, PCIe up)?",
        ("xid", "nvlink", "pcie_tx"),
        ("nvlink_drop", "pcie_rise"),
        leaf=True,
    ),
    _n(
        "availability",
        "",
        "Are replicas down or requests failing at the gateway?",
        ("running", "gateway_requests"),
    ),
    _n(
        "availability.replica_down",
        "availability",
        "Is a replica down for most of the window, or still down at its end?",
        ("running",),
        ("down_share",),
        leaf=True,
    ),
    _n(
        "availability.retry_storm",
        "availability",
        "Are retries amplifying the load (gateway requests per finished request up)?",
        ("gateway_requests", "request_rate"),
        ("gateway_amplification",),
        leaf=True,
    ),
    _n(
        "availability.gateway_errors",
        "availability",
        "Is the gateway failing requests while the engines are healthy?",
        ("gateway_requests",),
        ("gateway_error_share",),
        leaf=True,
    ),
    _n("quality", "", "Is the golden-set prober failing more?", ("prober_checks",)),
    _n(
        "quality.artifact_regression",
        "quality",
        "Did answers get worse with latency and errors unchanged (a bad artifact)?",
        ("prober_checks",),
        ("prober_fail_share",),
        leaf=True,
    ),
    _n("inventory", "", "Did a replica's vLLM version or metric dialect change?"),
    _n(
        "inventory.version_skew",
        "inventory",
        "Does a replica now speak another vLLM dialect than its peers?",
        leaf=True,
    ),
    _n("healthy", "", "Nothing breached: is the fleet healthy?", leaf=True),
)

NODE_BY_ID = {node.id: node for node in NODES}
LEAVES = tuple(node.id for node in NODES if node.leaf)
