"""One runbook per leaf of the triage tree, as first seeded. People edit them in the admin
afterwards; the seed never overwrites an existing runbook."""

from __future__ import annotations

from dataclasses import dataclass

from triage.runbooks import latency, other

SERVING = "model serving"
GPU_INFRA = "GPU infrastructure"
GATEWAY = "gateway and networking"
RELEASE = "model release"


@dataclass(frozen=True)
class RunbookSeed:
    leaf: str
    title: str
    owner_team: str
    body_markdown: str

    @property
    def slug(self) -> str:
        return runbook_slug(self.leaf)


def runbook_slug(leaf: str) -> str:
    """`ttft.queue.load` -> `ttft-queue-load`: the leaf's runbook slug."""
    return leaf.replace(".", "-")


RUNBOOK_SEEDS: tuple[RunbookSeed, ...] = (
    RunbookSeed("ttft.queue.load", "TTFT: queueing under load", SERVING, latency.TTFT_QUEUE_LOAD),
    RunbookSeed(
        "ttft.queue.kv_capacity",
        "TTFT: queueing for KV-cache capacity",
        SERVING,
        latency.TTFT_QUEUE_KV_CAPACITY,
    ),
    RunbookSeed(
        "ttft.queue.lora_deferred",
        "TTFT: requests deferred for LoRA slots or KV transfers",
        SERVING,
        latency.TTFT_QUEUE_LORA_DEFERRED,
    ),
    RunbookSeed(
        "ttft.prefill.long_prompts",
        "TTFT: prefill of longer prompts",
        SERVING,
        latency.TTFT_PREFILL_LONG_PROMPTS,
    ),
    RunbookSeed(
        "ttft.prefill.cache_miss",
        "TTFT: prefix-cache misses",
        SERVING,
        latency.TTFT_PREFILL_CACHE_MISS,
    ),
    RunbookSeed(
        "ttft.frontend",
        "TTFT: frontend time (not queue, not prefill)",
        SERVING,
        latency.TTFT_FRONTEND,
    ),  # fmt: skip
    RunbookSeed(
        "tpot.step_work", "TPOT: more work per engine step", SERVING, latency.TPOT_STEP_WORK
    ),
    RunbookSeed("tpot.preemption", "TPOT: preemptions", SERVING, latency.TPOT_PREEMPTION),
    RunbookSeed(
        "tpot.straggler.gpu_throttle",
        "TPOT: a straggler replica with throttled GPUs",
        GPU_INFRA,
        latency.TPOT_STRAGGLER_GPU_THROTTLE,
    ),
    RunbookSeed(
        "tpot.collective",
        "TPOT: slow collectives between GPUs",
        GPU_INFRA,
        latency.TPOT_COLLECTIVE,
    ),
    RunbookSeed(
        "availability.replica_down",
        "Availability: a replica is down",
        SERVING,
        other.AVAILABILITY_REPLICA_DOWN,
    ),
    RunbookSeed(
        "availability.retry_storm",
        "Availability: a retry storm",
        GATEWAY,
        other.AVAILABILITY_RETRY_STORM,
    ),
    RunbookSeed(
        "availability.gateway_errors",
        "Availability: errors at the gateway",
        GATEWAY,
        other.AVAILABILITY_GATEWAY_ERRORS,
    ),
    RunbookSeed(
        "quality.artifact_regression",
        "Quality: regression after an artifact change",
        RELEASE,
        other.QUALITY_ARTIFACT_REGRESSION,
    ),
    RunbookSeed(
        "inventory.version_skew",
        "Inventory: versions differ between replicas",
        RELEASE,
        other.INVENTORY_VERSION_SKEW,
    ),
    RunbookSeed("healthy", "No cause found: the fleet looks healthy", SERVING, other.HEALTHY),
)

LEAVES: tuple[str, ...] = tuple(seed.leaf for seed in RUNBOOK_SEEDS)
