"""The overview's panels: what each one shows, in query specs over catalog keys.

A panel names the capability (inventory.capabilities) that decides whether it
can be drawn on a fleet, and the specs whose results become its traces.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from dashboard.queries import Gauge, Mean, Quantile, Rate, Ratio

# Rates and quantiles look back this far at each step (Prometheus `[1m]`-style windows).
RATE_WINDOW_SECONDS = 60.0


class Group(StrEnum):
    TRAFFIC = "traffic"
    QUEUE = "queue"
    LATENCY = "latency"
    ENGINE = "engine"
    GPU = "gpu"


GROUP_TITLES: Mapping[Group, str] = {
    Group.TRAFFIC: "Traffic",
    Group.QUEUE: "Queue",
    Group.LATENCY: "Latency",
    Group.ENGINE: "Engine",
    Group.GPU: "GPU and platform",
}


@dataclass(frozen=True)
class Panel:
    id: str
    group: Group
    title: str
    unit: str  # shown on the y axis: "requests/s", "seconds", "ratio", ...
    capability: str
    traces: Mapping[str, object] = field(default_factory=dict)  # trace name -> spec


def _latency(id: str, key: str, title: str) -> Panel:
    w = RATE_WINDOW_SECONDS
    return Panel(
        id,
        Group.LATENCY,
        title,
        "seconds",
        id,
        {
            "p50": Quantile(key, 0.5, window_seconds=w),
            "p90": Quantile(key, 0.9, window_seconds=w),
            "p99": Quantile(key, 0.99, window_seconds=w),
            "mean": Mean(key, window_seconds=w),
        },
    )


W = RATE_WINDOW_SECONDS

PANELS: tuple[Panel, ...] = (
    Panel(
        "traffic.requests", Group.TRAFFIC, "Finished requests by reason", "requests/s",
        "traffic.requests",
        {"by reason": Rate("request_success", by=("finished_reason",), window_seconds=W)},
    ),
    Panel(
        "traffic.tokens", Group.TRAFFIC, "Prompt and generation tokens", "tokens/s",
        "traffic.tokens",
        {
            "prompt": Rate("prompt_tokens", window_seconds=W),
            "generation": Rate("generation_tokens", window_seconds=W),
        },
    ),
    Panel(
        "queue.depth", Group.QUEUE, "Running and waiting requests", "requests",
        "queue.depth",
        {"running": Gauge("running", agg="sum"), "waiting": Gauge("waiting", agg="sum")},
    ),
    Panel(
        "queue.time", Group.QUEUE, "Queue time", "seconds", "queue.time",
        {
            "p50": Quantile("queue_time", 0.5, window_seconds=W),
            "p99": Quantile("queue_time", 0.99, window_seconds=W),
        },
    ),
    _latency("latency.ttft", "ttft", "Time to first token"),
    _latency("latency.itl", "itl", "Inter-token latency"),
    _latency("latency.tpot", "request_tpot", "Time per output token (per request)"),
    _latency("latency.e2e", "e2e", "End-to-end latency"),
    Panel(
        "engine.kv", Group.ENGINE, "KV cache usage (max per replica)", "ratio", "engine.kv",
        {"by replica": Gauge("kv_usage", agg="max", by=("instance",))},
    ),
    Panel(
        "engine.preemptions", Group.ENGINE, "Preemptions", "events/s", "engine.preemptions",
        {"by replica": Rate("preemptions", by=("instance",), window_seconds=W)},
    ),
    Panel(
        "engine.prefix", Group.ENGINE, "Prefix-cache hit ratio", "ratio", "engine.prefix",
        {
            "hit ratio": Ratio(
                Rate("prefix_hits", window_seconds=W), Rate("prefix_queries", window_seconds=W)
            )
        },
    ),
    Panel(
        "gpu.util", Group.GPU, "GPU utilisation", "percent", "gpu.util",
        {"by replica": Gauge("gpu_util", agg="avg", by=("instance",))},
    ),
    Panel(
        "gpu.memory", Group.GPU, "Framebuffer used", "MiB", "gpu.memory",
        {"by replica": Gauge("gpu_fb_used", agg="sum", by=("instance",))},
    ),
    Panel(
        "gpu.power", Group.GPU, "Power", "watts", "gpu.power",
        {"by replica": Gauge("gpu_power", agg="sum", by=("instance",))},
    ),
    Panel(
        "gpu.clocks", Group.GPU, "SM clock (throttling shows here)", "MHz", "gpu.power",
        {"by replica": Gauge("gpu_sm_clock", agg="avg", by=("instance",))},
    ),
    Panel(
        "gpu.pipes", Group.GPU, "DRAM and tensor activity", "ratio", "gpu.pipes",
        {
            "DRAM": Gauge("gpu_dram_active", agg="avg", by=("instance",)),
            "tensor": Gauge("gpu_tensor_active", agg="avg", by=("instance",)),
        },
    ),
    Panel(
        "gpu.errors", Group.GPU, "Last XID error code", "code", "gpu.errors",
        {"by replica": Gauge("gpu_xid", agg="max", by=("instance",))},
    ),
    Panel(
        "platform.http", Group.GPU, "HTTP responses by status class", "requests/s",
        "platform.http",
        {"by status": Rate("http_requests", by=("status",), window_seconds=W)},
    ),
    Panel(
        "platform.process", Group.GPU, "API-server CPU", "cores", "platform.process",
        {"by replica": Rate("process_cpu", by=("instance",), window_seconds=W)},
    ),
)  # fmt: skip

PANELS_BY_ID: Mapping[str, Panel] = {panel.id: panel for panel in PANELS}
