"""One check per node of the triage tree (`triage.walk.tree`), by node id."""

from __future__ import annotations

from collections.abc import Callable

from triage.walk.checks import other, prefill, tpot, ttft
from triage.walk.checks.base import Context, Outcome

CHECKS: dict[str, Callable[[Context], Outcome]] = {
    "ttft": ttft.ttft,
    "ttft.queue": ttft.ttft_queue,
    "ttft.queue.kv_capacity": ttft.kv_capacity,
    "ttft.queue.lora_deferred": ttft.lora_deferred,
    "ttft.queue.load": ttft.queue_load,
    "ttft.frontend": ttft.frontend,
    "ttft.prefill": prefill.ttft_prefill,
    "ttft.prefill.long_prompts": prefill.long_prompts,
    "ttft.prefill.cache_miss": prefill.cache_miss,
    "tpot": tpot.tpot,
    "tpot.step_work": tpot.step_work,
    "tpot.preemption": tpot.preemption,
    "tpot.straggler": tpot.straggler,
    "tpot.straggler.gpu_throttle": tpot.gpu_throttle,
    "tpot.collective": tpot.collective,
    "availability": other.availability,
    "availability.replica_down": other.replica_down,
    "availability.retry_storm": other.retry_storm,
    "availability.gateway_errors": other.gateway_errors,
    "quality": other.quality,
    "quality.artifact_regression": other.artifact_regression,
    "inventory": other.version_skew,
    "inventory.version_skew": other.version_skew,
}

__all__ = ["CHECKS", "Context", "Outcome"]
