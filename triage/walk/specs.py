"""What the walk reads, by statistic name: the query spec behind each (over a window of
a given length) with its unit and the words a figure's source uses."""

from __future__ import annotations

from collections.abc import Callable

from queries import Gauge, Increase, Mean, Quantile, Rate, Ratio, Spec

# What each point statistic reads: (spec builder, unit, source text).
POINT_SPECS: dict[str, tuple[str, str]] = {
    "ttft_mean": ("seconds", "mean of the TTFT histogram"),
    "ttft_p95": ("seconds", "p95 of the TTFT histogram (bucket-interpolated)"),
    "queue_mean": ("seconds", "mean engine queue time"),
    "prefill_mean": ("seconds", "mean prefill time"),
    "itl_mean": ("seconds", "mean inter-token latency"),
    "tpot_mean": ("seconds", "mean per-request time per output token"),
    "requests": ("requests", "requests finished (increase of the success counter)"),
    "request_rate": ("requests_per_second", "rate of finished requests"),
    "prompt_mean": ("tokens", "mean prompt length"),
    "output_mean": ("tokens", "mean output length"),
    "step_tokens": ("tokens", "mean tokens per engine step"),
    "preemptions": ("events_per_second", "rate of preemptions"),
    "cpu_rate": ("cpu_seconds_per_second", "API-server process CPU rate"),
    "prefix_ratio": ("ratio", "prefix-cache hits / queries"),
}
SERIES_SPECS: dict[str, tuple[str, str]] = {
    "running": ("requests", "running requests (gauge)"),
    "waiting": ("requests", "waiting requests (gauge)"),
    "waiting_capacity": ("requests", "waiting requests with reason=capacity (gauge)"),
    "waiting_deferred": ("requests", "waiting requests with reason=deferred (gauge)"),
    "kv_usage": ("ratio", "KV cache usage (gauge, peak over engines)"),
    "prefix_hit_rate": ("ratio", "V0 prefix-cache hit rate (gauge)"),
    "ttft_trend": ("seconds", "mean TTFT over each grid step"),
    "itl_trend": ("seconds", "mean inter-token latency over each grid step"),
    "prefix_trend": ("ratio", "prefix-cache hits / queries over each grid step"),
}
GPU_SPECS: dict[str, tuple[str, str]] = {
    "sm_clock": ("MHz", "DCGM_FI_DEV_SM_CLOCK, mean over the replica's GPUs"),
    "power": ("watts", "DCGM_FI_DEV_POWER_USAGE, mean over the replica's GPUs"),
    "xid": ("none", "DCGM_FI_DEV_XID_ERRORS, last XID seen on any of the replica's GPUs"),
    "pcie_tx": ("bytes_per_second", "DCGM_FI_PROF_PCIE_TX_BYTES, mean over the GPUs"),
}
GPU_RATE_SPECS: dict[str, tuple[str, str]] = {
    "nvlink": ("bytes_per_second", "rate of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, summed"),
}
# The point statistics also read over the same window a day earlier, when the backend holds
# it: the sides' breach figures and the workload's, so a daily peak reads as one.
DAY_SPECS = ("ttft_mean", "itl_mean", "tpot_mean", "request_rate", "prompt_mean", "output_mean")
FLEET_SPECS: dict[str, tuple[str, str]] = {
    "gateway_requests": ("requests_per_second", "gateway requests by status"),
    "prober_checks": ("events_per_second", "golden-set prober checks by result"),
    "gateway_retries": ("requests_per_second", "gateway attempts that repeat an earlier one"),
}


def point_spec(name: str, seconds: float) -> Spec:
    by = ("instance",)
    specs: dict[str, Callable[[], Spec]] = {
        "ttft_mean": lambda: Mean("ttft", by=by, window_seconds=seconds),
        "ttft_p95": lambda: Quantile("ttft", 0.95, by=by, window_seconds=seconds),
        "queue_mean": lambda: Mean("queue_time", by=by, window_seconds=seconds),
        "prefill_mean": lambda: Mean("prefill_time", by=by, window_seconds=seconds),
        "itl_mean": lambda: Mean("itl", by=by, window_seconds=seconds),
        "tpot_mean": lambda: Mean("request_tpot", by=by, window_seconds=seconds),
        "requests": lambda: Increase("request_success", by=by, window_seconds=seconds),
        "request_rate": lambda: Rate("request_success", by=by, window_seconds=seconds),
        "prompt_mean": lambda: Mean("prompt_len", by=by, window_seconds=seconds),
        "output_mean": lambda: Mean("output_len", by=by, window_seconds=seconds),
        "step_tokens": lambda: Mean("iteration_tokens", by=by, window_seconds=seconds),
        "preemptions": lambda: Rate("preemptions", by=by, window_seconds=seconds),
        "cpu_rate": lambda: Rate("process_cpu", by=by, window_seconds=seconds),
        "prefix_ratio": lambda: Ratio(
            Rate("prefix_hits", by=by, window_seconds=seconds),
            Rate("prefix_queries", by=by, window_seconds=seconds),
        ),
        "nvlink": lambda: Rate(
            "gpu_nvlink_bandwidth", by=("instance", "gpu"), window_seconds=seconds
        ),
        "gateway_requests": lambda: Rate(
            "gateway_requests", by=("status",), window_seconds=seconds
        ),
        "prober_checks": lambda: Rate("prober_checks", by=("result",), window_seconds=seconds),
        "gateway_retries": lambda: Rate("gateway_retries", window_seconds=seconds),
    }
    return specs[name]()


def series_spec(name: str, step: float) -> Spec:
    by = ("instance",)
    # Trends use a rate window of two grid steps: short enough to see a dip, long
    # enough to hold a few scrapes at a 15-30 s interval.
    trend = max(2 * step, 60.0)
    specs: dict[str, Spec] = {
        "ttft_trend": Mean("ttft", by=by, window_seconds=trend),
        "itl_trend": Mean("itl", by=by, window_seconds=trend),
        "prefix_trend": Ratio(
            Rate("prefix_hits", by=by, window_seconds=trend),
            Rate("prefix_queries", by=by, window_seconds=trend),
        ),
        "running": Gauge("running", by=by),
        "waiting": Gauge("waiting", by=by),
        "waiting_capacity": Gauge("waiting_by_reason", by=by, match={"reason": "capacity"}),
        "waiting_deferred": Gauge("waiting_by_reason", by=by, match={"reason": "deferred"}),
        "kv_usage": Gauge("kv_usage", agg="max", by=by),
        "prefix_hit_rate": Gauge("prefix_hit_rate", agg="avg", by=by),
        "sm_clock": Gauge("gpu_sm_clock", agg="avg", by=("instance", "gpu")),
        "power": Gauge("gpu_power", agg="avg", by=("instance", "gpu")),
        "xid": Gauge("gpu_xid", agg="max", by=("instance", "gpu")),
        "pcie_tx": Gauge("gpu_pcie_tx", agg="avg", by=("instance", "gpu")),
    }
    return specs[name]
