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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from inventory.gpus import fleet_gpus
from inventory.models import Fleet
from queries import Backend, QueryResult, Scope, Spec, Window, run_queries
from triage.walk.lora import LORA_INFO, lora_wait_shares
from triage.walk.specs import (
    DAY_SPECS,
    FLEET_SPECS,
    GPU_RATE_SPECS,
    GPU_SPECS,
    POINT_SPECS,
    SERIES_SPECS,
    point_spec,
    series_spec,
)


@dataclass(frozen=True)
class Stat:
    """One statistic of one replica: the incident window's value and the baseline's."""

    value: float | None
    baseline: float | None
    lower: float | None = None  # a quantile's bucket, when it came from buckets
    upper: float | None = None
    day_before: float | None = None  # the same window a day earlier, when it was read

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
    # Every series read on the grid, as charted: name -> label -> (timestamps, values);
    # DCGM series per replica (the mean, for XIDs the largest, over its GPUs).
    charts: dict[str, dict[str, tuple[tuple[float, ...], tuple[float | None, ...]]]] = field(
        default_factory=dict
    )
    # The same window a day earlier when it held data for DAY_SPECS, else None and why.
    day_window: tuple[datetime, datetime] | None = None
    day_missing: str = ""
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
    day_before: str = "",
) -> Evidence:
    """Read everything the walk needs. `day_before` is "" to also read DAY_SPECS over the
    same window a day earlier, else why it is not read (the store does not hold it)."""
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
        specs[f"{name}@w"], windows[f"{name}@w"] = point_spec(name, seconds_w), at_w
        specs[f"{name}@b"], windows[f"{name}@b"] = point_spec(name, max(seconds_b, 60.0)), at_b
    for name in (*SERIES_SPECS, *GPU_SPECS):
        specs[name] = series_spec(name, step)
    if not day_before:
        at_d = Window(window[1] - DAY, window[1] - DAY, 60.0)
        for name in DAY_SPECS:
            specs[f"{name}@d"], windows[f"{name}@d"] = point_spec(name, seconds_w), at_d
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
        if results[name].has_data:
            read = {
                s.labels.get("instance", ""): (s.timestamps, s.values) for s in results[name].series
            }
            found.charts[name] = read
            if name in REDUCE:
                found.trends[name] = read
    for name in GPU_SPECS:
        _note(found, name, results[name])
        found.stats[name] = _gpu_series(results[name], window, baseline, gpu_owner, name)
        if results[name].has_data:
            found.charts[name] = _per_replica(results[name], gpu_owner, name)
    _day_before(found, results, day_before, (window[0] - DAY, window[1] - DAY))
    _availability(found, results["running"], window)
    if backend == "local":
        shares = lora_wait_shares(fleet, found.models, window, baseline)
        found.stats["lora_waiting"] = {i: Stat(*pair) for i, pair in shares.items()}
    else:
        found.missing["lora_waiting"] = f"{LORA_INFO} label history is read from the store only"
    return found


DAY = timedelta(days=1)


def _day_before(
    found: Evidence,
    results: Mapping[str, QueryResult],
    not_read: str,
    day_window: tuple[datetime, datetime],
) -> None:
    """Each DAY_SPECS statistic's value over the same window a day earlier, into its Stat."""
    if not_read:
        found.day_missing = not_read
        return
    read = {name: _single(results[f"{name}@d"]) for name in DAY_SPECS}
    if not any(read.values()):
        found.day_missing = "the same window a day earlier: the backend returned no samples"
        return
    found.day_window = day_window
    for name, values in read.items():
        stats = found.stats.setdefault(name, {})
        for instance, (value, _, _) in values.items():
            stats[instance] = replace(stats.get(instance, Stat(None, None)), day_before=value)


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


def _per_replica(
    result: QueryResult, owners: Mapping[tuple[str, str], str], name: str
) -> dict[str, tuple[tuple[float, ...], tuple[float | None, ...]]]:
    """A DCGM series per replica on the grid: the mean over its GPUs (for XIDs the largest),
    None where none of them had a value."""
    points: dict[str, dict[float, list[float]]] = {}
    for series in result.series:
        owner = owners.get((series.labels.get("instance", ""), series.labels.get("gpu", "")))
        if owner is None:
            continue
        at = points.setdefault(owner, {})
        for t, v in zip(series.timestamps, series.values, strict=True):
            bucket = at.setdefault(t, [])
            if v is not None:
                bucket.append(v)
    reduce = max if name == "xid" else statistics.fmean
    out: dict[str, tuple[tuple[float, ...], tuple[float | None, ...]]] = {}
    for owner, at in points.items():
        stamps = tuple(sorted(at))
        out[owner] = (stamps, tuple(reduce(at[t]) if at[t] else None for t in stamps))
    return out


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
