"""The overview's panels: what each one shows, in query specs over catalog keys.

A panel's specs (its traces) are the one declaration of what it reads: the capability
map of the inventory page asks the planner whether they resolve on a fleet
(dashboard.capabilities).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from dashboard.figures import PANEL_KINDS, PanelKind
from queries import Gauge, Mean, Quantile, Rate, Ratio, Spec

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
    traces: Mapping[str, Spec] = field(default_factory=dict)  # trace name -> spec
    # "line"; "stacked" (traces add up bottom-up in this order); "heatmap" (one `_bucket` Rate);
    # "codes" (values are codes such as XIDs, not amounts: steps, ticks at the codes seen).
    kind: PanelKind = "line"

    def __post_init__(self) -> None:
        if self.kind not in PANEL_KINDS:
            raise ValueError(f"{self.id}: kind must be one of {sorted(PANEL_KINDS)}")
        if self.kind == "heatmap":
            specs = list(self.traces.values())
            if len(specs) != 1 or not isinstance(specs[0], Rate) or "le" not in specs[0].by:
                raise ValueError(f"{self.id}: a heatmap takes one Rate(key, by=(..., 'le'))")


def _heatmap(id: str, group: Group, key: str, title: str, unit: str) -> Panel:
    # Summed over replicas per edge; edges only some replicas have (token buckets end at
    # each one's max_model_len) are left out by the query layer (queries.buckets).
    spec = Rate(key, by=("le",), window_seconds=RATE_WINDOW_SECONDS)
    return Panel(id, group, title, unit, {"per bucket": spec}, kind="heatmap")


def _latency(id: str, key: str, title: str) -> Panel:
    w = RATE_WINDOW_SECONDS
    return Panel(
        id,
        Group.LATENCY,
        title,
        "seconds",
        {
            "p50": Quantile(key, 0.5, window_seconds=w),
            "p90": Quantile(key, 0.9, window_seconds=w),
            "p99": Quantile(key, 0.99, window_seconds=w),
            "mean": Mean(key, window_seconds=w),
        },
    )


W = RATE_WINDOW_SECONDS
# DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL has no documented unit (reference section 9.1: "all-lane
# NVLink bandwidth counter"): the axis says so rather than guess bytes or KiB. Short enough
# for a 220 px axis title.
NVLINK_UNIT = "counter/s (DCGM gives no unit)"
# One line per GPU: its exporter and DCGM's `gpu` index (its slot on the node).
GPU = ("instance", "gpu")

PANELS: tuple[Panel, ...] = (
    Panel(
        "traffic.requests", Group.TRAFFIC, "Finished requests by reason", "requests/s",
        {"by reason": Rate("request_success", by=("finished_reason",), window_seconds=W)},
    ),
    Panel(
        "traffic.tokens", Group.TRAFFIC, "Prompt and generation tokens", "tokens/s",
        {
            "prompt": Rate("prompt_tokens", window_seconds=W),
            "generation": Rate("generation_tokens", window_seconds=W),
        },
    ),
    _heatmap("traffic.prompt_len", Group.TRAFFIC, "prompt_len", "Prompt length per request",
             "tokens"),
    _heatmap("traffic.output_len", Group.TRAFFIC, "output_len", "Output length per request",
             "tokens"),
    Panel(
        "queue.depth", Group.QUEUE, "Running and waiting requests", "requests",
        {"running": Gauge("running", agg="sum"), "waiting": Gauge("waiting", agg="sum")},
    ),
    Panel(
        # The reasons add up to the waiting count: stacked, the top is the queue's length.
        "queue.reasons", Group.QUEUE, "Waiting requests by reason", "requests",
        {"by reason": Gauge("waiting_by_reason", agg="sum", by=("reason",))},
        kind="stacked",
    ),
    Panel(
        "queue.time", Group.QUEUE, "Queue time", "seconds",
        {
            "p50": Quantile("queue_time", 0.5, window_seconds=W),
            "p99": Quantile("queue_time", 0.99, window_seconds=W),
        },
    ),
    _latency("latency.ttft", "ttft", "Time to first token"),
    _heatmap("latency.ttft_heatmap", Group.LATENCY, "ttft", "Time to first token per request",
             "seconds"),
    _latency("latency.itl", "itl", "Inter-token latency"),
    _latency("latency.tpot", "request_tpot", "Time per output token (per request)"),
    _latency("latency.e2e", "e2e", "End-to-end latency"),
    _heatmap("latency.e2e_heatmap", Group.LATENCY, "e2e", "End-to-end latency per request",
             "seconds"),
    Panel(
        # Stacked bottom-up in the order a request lives them, so the band that grew stands out.
        "latency.phases", Group.LATENCY, "Phase split: mean queue, prefill and decode time",
        "seconds",
        {
            "queue": Mean("queue_time", window_seconds=W),
            "prefill": Mean("prefill_time", window_seconds=W),
            "decode": Mean("decode_time", window_seconds=W),
        },
        kind="stacked",
    ),
    Panel(
        "engine.kv", Group.ENGINE, "KV cache usage (max per replica)", "ratio",
        {"by replica": Gauge("kv_usage", agg="max", by=("instance",))},
    ),
    Panel(
        "engine.preemptions", Group.ENGINE, "Preemptions", "events/s",
        {"by replica": Rate("preemptions", by=("instance",), window_seconds=W)},
    ),
    Panel(
        "engine.prefix", Group.ENGINE, "Prefix-cache hit ratio", "ratio",
        {
            "hit ratio": Ratio(
                Rate("prefix_hits", window_seconds=W), Rate("prefix_queries", window_seconds=W)
            )
        },
    ),
    Panel(
        # Computed, local-cache and external-KV tokens add up to all prompt tokens.
        "engine.sources", Group.ENGINE, "Prompt tokens by source", "tokens/s",
        {"by source": Rate("prompt_tokens_by_source", by=("source",), window_seconds=W)},
        kind="stacked",
    ),
    Panel(
        "engine.iteration", Group.ENGINE, "Tokens per engine step", "tokens",
        {
            "p50": Quantile("iteration_tokens", 0.5, window_seconds=W),
            "p99": Quantile("iteration_tokens", 0.99, window_seconds=W),
        },
    ),
    Panel(
        "engine.spec_decode", Group.ENGINE, "Speculative decoding: draft tokens accepted",
        "ratio",
        {
            "acceptance": Ratio(
                Rate("spec_decode_accepted_tokens", window_seconds=W),
                Rate("spec_decode_draft_tokens", window_seconds=W),
            )
        },
    ),
    Panel(
        # vLLM's "mean acceptance length" is 1 + this (the target model's own token);
        # specs cannot add a constant, so the panel shows the part the drafter earns.
        "engine.spec_length", Group.ENGINE, "Accepted draft tokens per draft round",
        "tokens",
        {
            "accepted per draft": Ratio(
                Rate("spec_decode_accepted_tokens", window_seconds=W),
                Rate("spec_decode_drafts", window_seconds=W),
            )
        },
    ),
    # DCGM series are per GPU: one line per GPU (exporter instance and DCGM's `gpu`
    # index), never a sum across GPUs in a per-GPU unit. The query layer labels each
    # GPU's series with the replica using it (inventory.gpus), so legends name it; on a
    # replica's page only that replica's GPUs are read.
    Panel(
        "gpu.util", Group.GPU, "GPU utilisation (per GPU)", "percent",
        {"by GPU": Gauge("gpu_util", agg="max", by=GPU)},
    ),
    Panel(
        "gpu.memory", Group.GPU, "Framebuffer used (per GPU)", "MiB",
        {"by GPU": Gauge("gpu_fb_used", agg="max", by=GPU)},
    ),
    Panel(
        "gpu.power", Group.GPU, "Power (per GPU)", "watts",
        {"by GPU": Gauge("gpu_power", agg="max", by=GPU)},
    ),
    Panel(
        "gpu.clocks", Group.GPU, "SM clock (per GPU: throttling shows here)", "MHz",
        {"by GPU": Gauge("gpu_sm_clock", agg="min", by=GPU)},
    ),
    Panel(
        "gpu.pipes", Group.GPU, "DRAM and tensor activity (per GPU)", "ratio",
        {
            "DRAM": Gauge("gpu_dram_active", agg="max", by=GPU),
            "tensor": Gauge("gpu_tensor_active", agg="max", by=GPU),
        },
    ),
    Panel(
        # The value of the last XID (reference 9.1): a code, not an amount, so it is drawn
        # as steps with ticks at the codes seen only, never at 0.5.
        "gpu.errors", Group.GPU, "Last XID error code (per GPU)", "XID code",
        {"by GPU": Gauge("gpu_xid", agg="max", by=GPU)},
        kind="codes",
    ),
    Panel(
        # A counter without a unit (NVLINK_UNIT): compare GPUs, don't convert.
        "gpu.nvlink", Group.GPU, "NVLink traffic, all lanes (per GPU)", NVLINK_UNIT,
        {"by GPU": Rate("gpu_nvlink_bandwidth", by=GPU, window_seconds=W)},
    ),
    Panel(
        "platform.http", Group.GPU, "HTTP responses by status class", "requests/s",
        {"by status": Rate("http_requests", by=("status",), window_seconds=W)},
    ),
    Panel(
        "platform.process", Group.GPU, "API-server CPU", "cores",
        {"by replica": Rate("process_cpu", by=("instance",), window_seconds=W)},
    ),
    Panel(
        "platform.memory", Group.GPU, "API-server resident memory", "bytes",
        {"by replica": Gauge("process_rss", agg="sum", by=("instance",))},
    ),
)  # fmt: skip

PANELS_BY_ID: Mapping[str, Panel] = {panel.id: panel for panel in PANELS}
