"""The walk's reads: every statistic it needs, per engine replica, for the incident window
and its baseline, in one batch of queries (the query layer picks each replica's real
metric names, whichever vLLM dialect it speaks).

Point statistics (means, rates, quantiles) are single evaluations over each whole window;
gauges are read as a series over baseline and window and reduced here (mean, peak, the
share of the grid a replica was missing). DCGM series are tied to the replica using each
GPU (`inventory.gpus`). What a backend could not answer keeps its reason: a check that
needs it says "insufficient evidence" with that reason, never reads it as zero.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from inventory.gpus import fleet_gpus
from inventory.models import Fleet
from queries import (
    Backend,
    Gauge,
    Increase,
    Mean,
    Quantile,
    QueryResult,
    Rate,
    Ratio,
    Scope,
    Spec,
    Window,
    run_queries,
)

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
FLEET_SPECS: dict[str, tuple[str, str]] = {
    "gateway_requests": ("requests_per_second", "gateway requests by status"),
    "prober_checks": ("events_per_second", "golden-set prober checks by result"),
    "gateway_retries": ("requests_per_second", "gateway attempts that repeat an earlier one"),
}


def _point_spec(name: str, seconds: float) -> Spec:
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


def _series_spec(name: str, step: float) -> Spec:
    by = ("instance",)
    # Trends use a rate window of two grid steps: short enough to see a dip, long
    # enough to hold a few scrapes at a 15-30 s interval.
    trend = max(2 * step, 60.0)
    specs: dict[str, Spec] = {
        "ttft_trend": Mean("ttft", by=by, window_seconds=trend),
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


@dataclass(frozen=True)
class Stat:
    """One statistic of one replica: the incident window's value and the baseline's."""

    value: float | None
    baseline: float | None
    lower: float | None = None  # a quantile's bucket, when it came from buckets
    upper: float | None = None

    @property
    def bound(self) -> str:
        if self.lower is not None and self.upper is None:
            return f"> {self.lower:g} (past the last bucket edge)"
        if self.lower is not None and self.upper is not None and self.value is not None:
            return f"interpolated within ({self.lower:g}, {self.upper:g}]"
        return ""


@dataclass
class Evidence:
    fleet: Fleet
    backend: Backend
    window: tuple[datetime, datetime]
    baseline: tuple[datetime, datetime]
    models: dict[str, str]  # engine instance -> model_name
    stats: dict[str, dict[str, Stat]] = field(default_factory=dict)  # name -> instance -> Stat
    missing: dict[str, str] = field(default_factory=dict)  # name -> why it is unavailable
    sources: dict[str, str] = field(default_factory=dict)  # name -> real metric name read
    down_share: dict[str, float] = field(default_factory=dict)  # instance -> incident share
    down_at_end: set[str] = field(default_factory=set)
    fleet_stats: dict[str, dict[str, Stat]] = field(default_factory=dict)  # name -> label -> Stat
    # Trends as read: name -> instance -> (timestamps, values), for change points.
    trends: dict[str, dict[str, tuple[tuple[float, ...], tuple[float | None, ...]]]] = field(
        default_factory=dict
    )
    queries: int = 0
    # Set when the backend itself failed every query (Prometheus down, say): the reason.
    backend_failed: str = ""

    def stat(self, name: str, instance: str) -> Stat:
        return self.stats.get(name, {}).get(instance, Stat(None, None))

    def instances_of(self, model_name: str) -> list[str]:
        return sorted(i for i, m in self.models.items() if m == model_name)

    def peers(self, name: str, instance: str) -> float | None:
        """The median of the other replicas serving the same model, in the window."""
        model = self.models.get(instance)
        values = [
            s.value
            for other, s in self.stats.get(name, {}).items()
            if other != instance and self.models.get(other) == model and s.value is not None
        ]
        return statistics.median(values) if values else None

    def why_missing(self, name: str, instance: str | None = None) -> str:
        if name in self.missing:
            return self.missing[name]
        if instance is not None and self.stat(name, instance).value is None:
            return f"{name}: no samples from {instance} in the window"
        return ""


def _engines(fleet: Fleet, model_name: str | None) -> dict[str, str]:
    from inventory.gpus import latest_series_labels
    from inventory.selectors import scope_endpoints

    instances = {e.instance for e in scope_endpoints(fleet=fleet) if e.kind == "engine"}
    models: dict[str, str] = {}
    for instance, series in latest_series_labels(fleet, instances).items():
        names = sorted({s["model_name"] for s in series if s.get("model_name")})
        if names and (model_name is None or model_name in names):
            models[instance] = model_name or names[0]
    return models


def _grid_step(start: datetime, end: datetime) -> float:
    # About 120 points over baseline and window: enough to see a dip, cheap to read.
    return max(15.0, math.ceil((end - start).total_seconds() / 120 / 15) * 15)


def evidence_read(
    fleet: Fleet,
    *,
    model_name: str | None,
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
    backend: Backend,
) -> Evidence:
    models = _engines(fleet, model_name)
    found = Evidence(fleet, backend, window, baseline, models)
    if not models:
        return found
    seconds_w = (window[1] - window[0]).total_seconds()
    seconds_b = (baseline[1] - baseline[0]).total_seconds()
    at_w = Window(window[1], window[1], 60.0)
    at_b = Window(baseline[1], baseline[1], 60.0)
    step = _grid_step(baseline[0], window[1])
    grid = Window(baseline[0], window[1], step)
    specs: dict[str, Spec] = {}
    windows: dict[str, Window] = {}
    point_names = [*POINT_SPECS, *GPU_RATE_SPECS, *FLEET_SPECS]
    for name in point_names:
        specs[f"{name}@w"], windows[f"{name}@w"] = _point_spec(name, seconds_w), at_w
        specs[f"{name}@b"], windows[f"{name}@b"] = _point_spec(name, max(seconds_b, 60.0)), at_b
    for name in (*SERIES_SPECS, *GPU_SPECS):
        specs[name] = _series_spec(name, step)
    scope = Scope(fleet, model_name)
    results = run_queries(specs, scope=scope, window=grid, backend=backend, windows=windows)
    found.queries = len(specs)
    # Nothing answered and the backend failed (the rest is what planning alone refused,
    # such as metrics the fleet does not expose).
    errors = [r for r in results.values() if r.status == "error"]
    if errors and not any(r.has_data for r in results.values()):
        found.backend_failed = errors[0].message or errors[0].reason
    gpu_owner = _gpu_owners(fleet)
    for name in point_names:
        w, b = results[f"{name}@w"], results[f"{name}@b"]
        _note(found, name, w)
        if name in FLEET_SPECS:
            found.fleet_stats[name] = _by_label(w, b, name)
        elif name in GPU_RATE_SPECS:
            found.stats[name] = _gpu_points(w, b, gpu_owner)
        else:
            found.stats[name] = _points(w, b)
    for name in SERIES_SPECS:
        _note(found, name, results[name])
        found.stats[name] = _reduced(results[name], window, baseline, how=REDUCE.get(name, "mean"))
        if name in REDUCE and results[name].has_data:
            found.trends[name] = {
                s.labels.get("instance", ""): (s.timestamps, s.values) for s in results[name].series
            }
    for name in GPU_SPECS:
        _note(found, name, results[name])
        found.stats[name] = _gpu_series(results[name], window, baseline, gpu_owner, name)
    _availability(found, results["running"], window)
    _lora_waits(found, fleet)
    return found


LORA_INFO = "vllm:lora_requests_info"


def _adapters(text: str | None) -> set[str]:
    return {a for a in (text or "").split(",") if a}


def _slot_wait(labels: Mapping[str, str]) -> bool:
    """An adapter waits for a slot, not merely in the queue: every slot is taken and a
    waiting adapter is not among the running ones (a queue of requests for loaded
    adapters is load, not LoRA churn)."""
    running = _adapters(labels.get("running_lora_adapters"))
    waiting = _adapters(labels.get("waiting_lora_adapters"))
    try:
        slots = int(float(labels.get("max_lora", "")))
    except ValueError:
        return False
    return len(running) >= slots > 0 and bool(waiting - running)


def _lora_waits(found: Evidence, fleet: Fleet) -> None:
    """The share of each window's scrapes in which `vllm:lora_requests_info` shows an
    adapter waiting for a slot: LoRA slot waits on versions without `waiting_by_reason`.
    The adapters are label values, so this reads the store's layouts over time (the
    embedded store only)."""
    if found.backend != "local":
        found.missing["lora_waiting"] = (
            f"{LORA_INFO} label history is read from the embedded store only"
        )
        return
    from inventory.selectors import scope_endpoints
    from inventory.store import layout_runs

    ids = {
        e.endpoint_id: e.instance
        for e in scope_endpoints(fleet=fleet)
        if e.instance in found.models
    }
    runs = layout_runs(endpoint_ids=list(ids), start=found.baseline[0], end=found.window[1])
    shares: dict[str, Stat] = {}
    for endpoint_id, spans in runs.items():
        counts = {"window": [0, 0], "baseline": [0, 0]}
        lora = False
        for run in spans:
            waiting = False
            for name, labels in run.series:
                if name.startswith(LORA_INFO):
                    lora = True
                    waiting = waiting or _slot_wait(labels)
            part = "window" if run.first_at >= found.window[0] else "baseline"
            counts[part][0] += run.frames * waiting
            counts[part][1] += run.frames
        if lora:
            shares[ids[endpoint_id]] = Stat(
                counts["window"][0] / counts["window"][1] if counts["window"][1] else None,
                counts["baseline"][0] / counts["baseline"][1] if counts["baseline"][1] else None,
            )
    found.stats["lora_waiting"] = shares


def _note(found: Evidence, name: str, result: QueryResult) -> None:
    if result.resolved_name:
        found.sources[name] = result.resolved_name
    if not result.has_data:
        found.missing[name] = result.message or result.reason or "no data"


def _single(result: QueryResult) -> dict[str, tuple[float | None, float | None, float | None]]:
    """instance -> (value, lower, upper) of a one-point result."""
    out: dict[str, tuple[float | None, float | None, float | None]] = {}
    for series in result.series if result.has_data else ():
        instance = series.labels.get("instance", "")
        if not series.values:
            continue
        lower = series.lower[-1] if series.lower else None
        upper = series.upper[-1] if series.upper else None
        out[instance] = (series.values[-1], lower, upper)
    return out


def _points(w: QueryResult, b: QueryResult) -> dict[str, Stat]:
    now, before = _single(w), _single(b)
    return {
        instance: Stat(
            now.get(instance, (None, None, None))[0],
            before.get(instance, (None, None, None))[0],
            now.get(instance, (None, None, None))[1],
            now.get(instance, (None, None, None))[2],
        )
        for instance in {*now, *before}
    }


def _by_label(w: QueryResult, b: QueryResult, name: str) -> dict[str, Stat]:
    label = {"gateway_requests": "status", "prober_checks": "result"}.get(name, "")

    def totals(result: QueryResult) -> dict[str, float]:
        out: dict[str, float] = {}
        for series in result.series if result.has_data else ():
            value = series.values[-1] if series.values else None
            if value is not None:
                key = series.labels.get(label, "")
                out[key] = out.get(key, 0.0) + value
        return out

    now, before = totals(w), totals(b)
    return {key: Stat(now.get(key), before.get(key)) for key in {*now, *before}}


def _gpu_owners(fleet: Fleet) -> dict[tuple[str, str], str]:
    """(exporter instance, gpu index) -> the engine instance using that GPU."""
    gpus = fleet_gpus(fleet)
    owners: dict[tuple[str, str], str] = {}
    for exporter in gpus.exporters:
        for index in gpus.all_gpus(exporter):
            found = gpus.assignment(exporter, index)
            if found is not None and found.replica is not None:
                owners[(exporter, index)] = found.replica
    return owners


def _gpu_points(
    w: QueryResult, b: QueryResult, owners: Mapping[tuple[str, str], str]
) -> dict[str, Stat]:
    def summed(result: QueryResult) -> dict[str, float]:
        out: dict[str, float] = {}
        for series in result.series if result.has_data else ():
            owner = owners.get((series.labels.get("instance", ""), series.labels.get("gpu", "")))
            value = series.values[-1] if series.values else None
            if owner is not None and value is not None:
                out[owner] = out.get(owner, 0.0) + value
        return out

    now, before = summed(w), summed(b)
    return {i: Stat(now.get(i), before.get(i)) for i in {*now, *before}}


def _split(
    series_ts: Sequence[float],
    values: Sequence[float | None],
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
) -> tuple[list[float], list[float]]:
    w0, w1 = window[0].timestamp(), window[1].timestamp()
    b0, b1 = baseline[0].timestamp(), baseline[1].timestamp()
    during = [v for t, v in zip(series_ts, values, strict=True) if w0 <= t <= w1 and v is not None]
    before = [v for t, v in zip(series_ts, values, strict=True) if b0 <= t < b1 and v is not None]
    return during, before


# How a series is cut to one figure per window: the KV peak matters (admission waits at
# the top), a trend's extreme shows a brief spike or dip a window mean would hide.
REDUCE: dict[str, str] = {"kv_usage": "max", "ttft_trend": "max", "prefix_trend": "min"}


def _reduced(
    result: QueryResult,
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
    *,
    how: str,
) -> dict[str, Stat]:
    out: dict[str, Stat] = {}
    for series in result.series if result.has_data else ():
        during, before = _split(series.timestamps, series.values, window, baseline)
        if how == "mean":
            value = statistics.fmean(during) if during else None
            base = statistics.fmean(before) if before else None
        else:
            # The baseline's typical value (median) against the window's extreme.
            pick = max if how == "max" else min
            value = pick(during) if during else None
            base = statistics.median(before) if before else None
        out[series.labels.get("instance", "")] = Stat(value, base)
    return out


def _gpu_series(
    result: QueryResult,
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
    owners: Mapping[tuple[str, str], str],
    name: str,
) -> dict[str, Stat]:
    during_all: dict[str, list[float]] = {}
    before_all: dict[str, list[float]] = {}
    for series in result.series if result.has_data else ():
        owner = owners.get((series.labels.get("instance", ""), series.labels.get("gpu", "")))
        if owner is None:
            continue
        during, before = _split(series.timestamps, series.values, window, baseline)
        during_all.setdefault(owner, []).extend(during)
        before_all.setdefault(owner, []).extend(before)
    reduce = max if name == "xid" else statistics.fmean
    return {
        owner: Stat(
            reduce(during_all[owner]) if during_all.get(owner) else None,
            reduce(before_all[owner]) if before_all.get(owner) else None,
        )
        for owner in {*during_all, *before_all}
    }


def _availability(found: Evidence, running: QueryResult, window: tuple[datetime, datetime]) -> None:
    """The share of the window's grid where a replica's gauge had no value (failed scrapes
    are gaps, never zeros), and which replicas were missing at the window's end."""
    seen: dict[str, tuple[tuple[float, ...], tuple[float | None, ...]]] = {
        s.labels.get("instance", ""): (s.timestamps, s.values)
        for s in (running.series if running.has_data else ())
    }
    w0, w1 = window[0].timestamp(), window[1].timestamp()
    for instance in found.models:
        stamps, values = seen.get(instance, ((), ()))
        inside = [v for t, v in zip(stamps, values, strict=True) if w0 <= t <= w1]
        if not inside:
            found.down_share[instance] = 1.0
            found.down_at_end.add(instance)
            continue
        found.down_share[instance] = sum(v is None for v in inside) / len(inside)
        # The last two grid points: one missed point at the edge can be the scrape in flight.
        if all(v is None for v in inside[-2:]):
            found.down_at_end.add(instance)


def windows_for(
    at: datetime, since: timedelta, baseline_span: timedelta, held_from: datetime | None
) -> tuple[tuple[datetime, datetime], tuple[datetime, datetime], str]:
    """(window, baseline, note): the baseline is the span before the window, clipped to
    what the backend holds (`held_from`), and the note says when it was clipped."""
    window = (at - since, at)
    start = window[0] - baseline_span
    note = ""
    if held_from is not None and held_from > start:
        start = min(held_from, window[0] - timedelta(minutes=5))
        note = (
            f"baseline clipped to {(window[0] - start).total_seconds() / 60:.0f} min: "
            "the backend holds no earlier data"
        )
    return window, (start, window[0]), note
