"""What a fleet used in a period, read through the query seam: traffic rows (per tenant
from the gateway, per replica from the engines), and per model the GPU-hours, how busy
those GPUs were, the engines' output tokens and the SLO's good fraction.

Counts are `increase()` over the period, so counter resets inside it (a restart) are
added back rather than read as negative usage. A figure the fleet cannot give is None
with the reason in `notes`, never zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from inventory.models import Fleet
from inventory.store import store_span
from queries import Backend, Gauge, Increase, QueryResult, Scope, Spec, Window, run_queries
from slo.evaluation import Interval

MIN_STEP_SECONDS = 60.0
PRESENCE_POINTS = 1000
# The engine reasons that are not a served answer; "length" and "stop" are.
FAILED_REASONS = frozenset({"error", "abort"})
FAILED_STATUSES = frozenset({"4xx", "5xx"})


@dataclass(frozen=True)
class TrafficRow:
    model_name: str
    labels: Mapping[str, str]  # tenant (gateway rows) or instance (engine rows)
    requests_ok: float
    requests_failed: float
    prompt_tokens: float
    output_tokens: float
    source: Literal["gateway", "engine"]


@dataclass(frozen=True)
class ModelUse:
    model_name: str
    gpu_hours: float | None
    gpu_hours_source: str
    busy_fraction: float | None  # mean GPU utilisation over the period, 0..1
    busy_source: str
    engine_output_tokens: float | None
    good_fraction: Interval | None
    good_source: str


@dataclass(frozen=True)
class PeriodUsage:
    start: datetime
    end: datetime
    backend: str
    rows: tuple[TrafficRow, ...]
    models: tuple[ModelUse, ...]
    notes: tuple[str, ...] = field(default=())
    # When the embedded store holds only part of the period: which part, in a sentence.
    coverage: str = ""


def period_usage(
    fleet: Fleet,
    *,
    start: datetime,
    end: datetime,
    backend: Backend,
    gpus_per_replica: int | None = None,
    goodput: bool = True,
    coverage: bool = True,
) -> PeriodUsage:
    """`goodput=False` leaves the SLO evaluation out (good fraction unknown) and
    `coverage=False` the check of how much of the period the store holds: for figures that
    only split cost, such as each bar of a trend."""
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    if end <= start:
        raise ValueError("the period ends before it starts")
    seconds = (end - start).total_seconds()
    notes: list[str] = []
    instant = Window(end, end, 60.0)
    fleet_specs: dict[str, Spec] = {
        "gw_requests": Increase("gateway_requests", by=("tenant", "model_name", "status"),
                                window_seconds=seconds),
        "gw_prompt": Increase("gateway_prompt_tokens", by=("tenant", "model_name"),
                              window_seconds=seconds),
        "gw_output": Increase("gateway_generation_tokens", by=("tenant", "model_name"),
                              window_seconds=seconds),
        "requests": Increase("request_success", by=("model_name", "instance", "finished_reason"),
                             window_seconds=seconds),
        "prompt": Increase("prompt_tokens", by=("model_name", "instance"), window_seconds=seconds),
        "output": Increase("generation_tokens", by=("model_name", "instance"),
                           window_seconds=seconds),
    }  # fmt: skip
    found = run_queries(fleet_specs, scope=Scope(fleet), window=instant, backend=backend)
    for key in ("requests", "output"):
        if not found[key].has_data:
            notes.append(f"engine usage: {_why(found[key])}")
    gateway = _gateway_rows(found)
    engine = _engine_rows(found)
    if not gateway:
        notes.append(f"no per-tenant traffic: {_why(found['gw_requests'])}")
    covered = {row.model_name for row in gateway}
    rows = gateway + [row for row in engine if row.model_name not in covered]
    output_by_model: dict[str, float] = {}
    for row in engine:
        output_by_model[row.model_name] = (
            output_by_model.get(row.model_name, 0.0) + row.output_tokens
        )
    models = sorted({row.model_name for row in rows} | set(output_by_model))
    # Presence is counted at evaluation points: a step of 1/1000 of the period keeps the
    # rounding at the period's edges under 0.2% of it, with a minute as the floor.
    step = max(MIN_STEP_SECONDS, seconds / PRESENCE_POINTS)
    range_window = Window(start, end, step).bounded()
    uses = tuple(
        _model_use(
            fleet,
            name,
            range_window,
            backend,
            output_by_model.get(name),
            gpus_per_replica,
            goodput=goodput,
        )  # fmt: skip
        for name in models
    )
    held = _store_coverage(fleet, start, end) if coverage and backend == "local" else ""
    return PeriodUsage(start, end, backend, tuple(rows), uses, tuple(notes), held)


# Scrapes land a few seconds apart: a period whose held part falls short of it by less than
# this is held whole.
_COVERAGE_SLACK_SECONDS = 120.0


def _store_coverage(fleet: Fleet, start: datetime, end: datetime) -> str:
    """Usage before FleetScope watched (or after it stopped) is unknown, not zero: a period
    the embedded store holds only part of says which part, so nobody reads its GPU-hours as
    the whole period's."""
    held = store_span(list(fleet.endpoints.values_list("id", flat=True)))
    whole = (end - start).total_seconds()
    if held is None or held[1] < start or held[0] >= end:
        return "the embedded store holds none of this period: its usage is unknown, not zero"
    first, last = max(held[0].astimezone(UTC), start), min(held[1].astimezone(UTC), end)
    covered = (last - first).total_seconds()
    if covered >= whole - _COVERAGE_SLACK_SECONDS:
        return ""
    return (
        f"the embedded store holds {first:%Y-%m-%d %H:%M} .. {last:%Y-%m-%d %H:%M} UTC of this "
        f"period ({covered / 3600:.1f} h of {whole / 3600:.1f} h): usage, GPU-hours and costs "
        "cover that part only; the rest is unknown, not zero"
    )


def _why(result: QueryResult) -> str:
    return result.message or result.reason or "no data"


def _last(values: tuple[float | None, ...]) -> float:
    value = values[-1] if values else None
    if value is None or not math.isfinite(value):
        return 0.0
    # increase() is never negative; a negative here would be a backend bug, not usage.
    return max(0.0, value)


def _gateway_rows(found: Mapping[str, QueryResult]) -> list[TrafficRow]:
    counts: dict[tuple[str, str], list[float]] = {}
    for series in found["gw_requests"].series:
        key = (series.labels.get("tenant", ""), series.labels.get("model_name", ""))
        slot = counts.setdefault(key, [0.0, 0.0, 0.0, 0.0])
        slot[1 if series.labels.get("status") in FAILED_STATUSES else 0] += _last(series.values)
    for index, name in ((2, "gw_prompt"), (3, "gw_output")):
        for series in found[name].series:
            key = (series.labels.get("tenant", ""), series.labels.get("model_name", ""))
            counts.setdefault(key, [0.0, 0.0, 0.0, 0.0])[index] += _last(series.values)
    return [
        TrafficRow(model, {"tenant": tenant}, ok, failed, prompt, output, "gateway")
        for (tenant, model), (ok, failed, prompt, output) in sorted(counts.items())
    ]


def _engine_rows(found: Mapping[str, QueryResult]) -> list[TrafficRow]:
    counts: dict[tuple[str, str], list[float]] = {}
    for series in found["requests"].series:
        key = (series.labels.get("model_name", ""), series.labels.get("instance", ""))
        slot = counts.setdefault(key, [0.0, 0.0, 0.0, 0.0])
        failed = series.labels.get("finished_reason") in FAILED_REASONS
        slot[1 if failed else 0] += _last(series.values)
    for index, name in ((2, "prompt"), (3, "output")):
        for series in found[name].series:
            key = (series.labels.get("model_name", ""), series.labels.get("instance", ""))
            counts.setdefault(key, [0.0, 0.0, 0.0, 0.0])[index] += _last(series.values)
    return [
        TrafficRow(model, {"instance": instance}, ok, failed, prompt, output, "engine")
        for (model, instance), (ok, failed, prompt, output) in sorted(counts.items())
        if model
    ]


def _model_use(
    fleet: Fleet,
    model_name: str,
    window: Window,
    backend: Backend,
    engine_output: float | None,
    gpus_per_replica: int | None,
    *,
    goodput: bool,
) -> ModelUse:
    # A GPU seen at k of the window's n evaluation points was there k/n of the period.
    span_hours = (window.end - window.start).total_seconds() / 3600
    span = f"{window.start:%Y-%m-%d %H:%MZ} .. {window.end:%Y-%m-%d %H:%MZ}"
    results = run_queries(
        {"gpu": Gauge("gpu_util", agg="avg", by=("instance", "gpu")),
         "engines": Gauge("running", by=("instance",))},
        scope=Scope(fleet, model_name), window=window, backend=backend,
    )  # fmt: skip
    gpu, engines = results["gpu"], results["engines"]
    hours = busy = None
    hours_source = busy_source = ""
    if gpu.has_data and gpu.series:
        points = [v for s in gpu.series for v in s.values if v is not None and math.isfinite(v)]
        hours = len(points) / window.points * span_hours
        hours_source = (
            f"{len(gpu.series)} GPU(s) seen by DCGM ({gpu.resolved_name}) every "
            f"{window.step_seconds:g} s over {span}"
        )
        if points:
            busy = min(1.0, max(0.0, sum(points) / len(points) / 100.0))
            busy_source = f"mean {gpu.resolved_name} over {span}"
    elif engines.has_data and gpus_per_replica:
        points = [v for s in engines.series for v in s.values if v is not None]
        hours = len(points) / window.points * span_hours * gpus_per_replica
        hours_source = (
            f"{len(engines.series)} replica(s) up every {window.step_seconds:g} s over {span}, "
            f"times {gpus_per_replica} GPU(s) per replica as entered"
        )
        busy_source = f"not measured: {_why(gpu)}"
    else:
        hours_source = f"not measured: {_why(gpu)}; enter GPUs per replica to count replica-hours"
        busy_source = hours_source
    good, good_source = None, "not evaluated for this figure"
    if goodput:
        good, good_source = _good_fraction(fleet, model_name, backend, window.end)
    return ModelUse(model_name, hours, hours_source, busy, busy_source, engine_output, good,
                    good_source)  # fmt: skip


def _good_fraction(
    fleet: Fleet, model_name: str, backend: Backend, at: datetime
) -> tuple[Interval | None, str]:
    from slo.evaluation import slo_statuses
    from slo.services import slo_for_model

    slo = slo_for_model(fleet, model_name)
    if slo is None:
        return None, f"no SLO selects {model_name}: good tokens need one"
    status = slo_statuses(fleet, backend=backend, at=at, slos=[slo])[0]
    goodput = status.goodput
    if goodput is None or goodput.fraction is None:
        why = goodput.note if goodput else "no goodput"
        return None, f"SLO {status.slug}: {why}"
    kind = "exact" if goodput.exact else "bounds"
    whose = "this model's" if slo.model_name else "the fleet-wide (every model alike)"
    return goodput.fraction, (
        f"goodput ({kind}) of {whose} SLO {status.slug}: {status.window_note}, at the period end"
    )
