"""The capability map: which panels, SLO objectives and triage checks can run on a fleet.

Each capability declares the catalog keys it needs (all required) and the ones
it uses when present. The map resolves each key against what the fleet really
exposes, so a capability is either runnable with named real metrics, runnable
on renamed fallbacks (said so), or not runnable with the reason.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from enum import StrEnum

from inventory.catalog import Resolution, resolve


class Area(StrEnum):
    PANEL = "panel"
    SLO = "slo"
    TRIAGE = "triage"


@dataclass(frozen=True)
class Capability:
    id: str
    area: Area
    title: str
    needs: tuple[str, ...]
    uses: tuple[str, ...] = ()


def _panel(id: str, title: str, needs: tuple[str, ...], uses: tuple[str, ...] = ()) -> Capability:
    return Capability(id, Area.PANEL, title, needs, uses)


def _slo(id: str, title: str, needs: tuple[str, ...], uses: tuple[str, ...] = ()) -> Capability:
    return Capability(id, Area.SLO, title, needs, uses)


def _triage(id: str, title: str, needs: tuple[str, ...], uses: tuple[str, ...] = ()) -> Capability:
    return Capability(id, Area.TRIAGE, title, needs, uses)


CAPABILITIES: tuple[Capability, ...] = (
    _panel("traffic.requests", "Requests/s by finish reason", ("request_success",)),
    _panel(
        "traffic.tokens", "Prompt and generation tokens/s", ("prompt_tokens", "generation_tokens")
    ),
    _panel("traffic.lengths", "Prompt and output length heatmaps", ("prompt_len", "output_len")),
    _panel(
        "queue.depth",
        "Running and waiting requests",
        ("running", "waiting"),
        ("waiting_by_reason",),
    ),
    _panel("queue.time", "Queue time p50/p99", ("queue_time",)),
    _panel("latency.ttft", "Time to first token", ("ttft",)),
    _panel("latency.itl", "Inter-token latency", ("itl",)),
    _panel("latency.tpot", "Per-request time per output token", ("request_tpot",)),
    _panel("latency.e2e", "End-to-end latency", ("e2e",)),
    _panel(
        "latency.phases",
        "Phase split: queue / prefill / decode",
        ("queue_time", "prefill_time", "decode_time"),
    ),
    _panel("engine.kv", "KV cache usage", ("kv_usage",)),
    _panel("engine.preemptions", "Preemptions/s", ("preemptions",)),
    _panel("engine.prefix", "Prefix-cache hit ratio", ("prefix_queries", "prefix_hits")),
    _panel("engine.sources", "Prompt tokens by source", ("prompt_tokens_by_source",)),
    _panel("engine.iteration", "Tokens per engine step", ("iteration_tokens",)),
    _panel(
        "engine.spec_decode",
        "Speculative-decoding acceptance",
        ("spec_decode_draft_tokens", "spec_decode_accepted_tokens"),
        ("spec_decode_drafts",),
    ),
    _panel("gpu.util", "GPU utilisation", ("gpu_util",), ("gpu_gr_engine_active",)),
    _panel("gpu.memory", "Framebuffer used", ("gpu_fb_used", "gpu_fb_free")),
    _panel("gpu.power", "Power and clocks", ("gpu_power", "gpu_sm_clock")),
    _panel("gpu.pipes", "DRAM and tensor activity", ("gpu_dram_active", "gpu_tensor_active")),
    _panel("gpu.errors", "XID errors and NVLink", ("gpu_xid",), ("gpu_nvlink_bandwidth",)),
    _panel("platform.http", "HTTP 4xx/5xx", ("http_requests",)),
    _panel("platform.process", "API-server CPU and memory", ("process_cpu", "process_rss")),
    _slo("slo.ttft", "TTFT attainment", ("ttft",)),
    _slo("slo.tpot", "TPOT attainment", ("request_tpot",)),
    _slo("slo.itl", "ITL attainment", ("itl",)),
    _slo("slo.e2e", "End-to-end latency attainment", ("e2e",)),
    _slo(
        "slo.availability",
        "Availability (errors and aborts)",
        ("request_success",),
        ("http_requests",),
    ),
    _slo("slo.goodput", "Goodput in output tokens", ("ttft", "request_tpot", "generation_tokens")),
    _triage(
        "triage.queue",
        "TTFT: queueing",
        ("queue_time", "waiting"),
        ("waiting_by_reason", "kv_usage"),
    ),
    _triage(
        "triage.frontend", "TTFT: tokenization / frontend", ("ttft", "queue_time", "prefill_time")
    ),
    _triage(
        "triage.prefill",
        "TTFT: prefill work",
        ("prefill_time", "prompt_len"),
        ("prompt_tokens_by_source",),
    ),
    _triage(
        "triage.cold",
        "TTFT: cold state (restarts, prefix cache)",
        ("prefix_queries", "prefix_hits"),
    ),
    _triage("triage.step", "TPOT: step work", ("itl", "iteration_tokens"), ("running",)),
    _triage("triage.kv", "TPOT: KV pressure and preemption", ("kv_usage", "preemptions")),
    _triage(
        "triage.kernel",
        "TPOT: kernel / collective",
        ("itl", "gpu_sm_clock"),
        ("gpu_nvlink_bandwidth", "gpu_power", "gpu_dram_active"),
    ),
)


class Verdict(StrEnum):
    READY = "ready"
    FALLBACK = "fallback"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class CapabilityStatus:
    capability: Capability
    verdict: Verdict
    needs: tuple[Resolution, ...]
    uses: tuple[Resolution, ...]

    @property
    def reasons(self) -> tuple[str, ...]:
        """What to tell the user: why it can't run, or which fallbacks it runs on."""
        return tuple(r.message for r in self.needs if r.status != "current")


def capability_map(exposed_names: Set[str]) -> list[CapabilityStatus]:
    statuses = []
    for capability in CAPABILITIES:
        needs = tuple(resolve(key, exposed_names) for key in capability.needs)
        uses = tuple(resolve(key, exposed_names) for key in capability.uses)
        if not all(r.available for r in needs):
            verdict = Verdict.UNAVAILABLE
        elif any(r.status == "fallback" for r in needs):
            verdict = Verdict.FALLBACK
        else:
            verdict = Verdict.READY
        statuses.append(CapabilityStatus(capability, verdict, needs, uses))
    return statuses
