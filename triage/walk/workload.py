"""Which workload dimensions moved between the baseline and the incident window, by how
much, and since when.

    workload_shifts(fleet, model_name="llama-3.1-8b-instruct", window=(t0, t1),
                    baseline=(b0, b1), backend="local")

Each dimension is one `Figure` (the incident window's value against the baseline's, each
over its whole span) inside a `Shift`, which adds whether it moved past its threshold,
the ratio, and the change point. Dimensions: request rate, prompt and output length (mean
and p95), the finish-reason mix, the model mix (whole fleet only) and the tenant mix (when
a gateway is registered). Missing is not zero: a dimension the fleet does not expose, or
with no data in a span, has value None and the reason in `source`.

Change point: the dimension's series over baseline start to window end (a point every
60 s, each over the last 120 s), against the mean of its baseline points. A point departs
when it is past the dimension's threshold from that mean (both parts: the ratio and the
absolute delta, in the same direction). The change point is the first point of the longest
run of departing points, where one point back inside does not end a run (a 120 s rate of a
bursty workload dips now and then) and a run needs MIN_RUN_POINTS points; `since` is None
when no run qualifies, or when the figure did not move at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from inventory.models import Fleet
from queries import (
    Backend,
    Mean,
    Quantile,
    QueryResult,
    Rate,
    Scope,
    Spec,
    Window,
    run_queries,
    spec_keys,
)
from triage.walk.types import Figure

STEP_SECONDS = 60.0
SERIES_RANGE_SECONDS = 120.0  # each series point's range: a few 15-30 s scrapes
MIN_RUN_POINTS = 3  # a shift lasts three minutes at least, a burst does not
MIN_SHARE_REQUESTS = 20.0  # requests in a span below which a mix's shares are noise


@dataclass(frozen=True)
class Threshold:
    """A move counts when the value is past both: x`ratio` (or /`ratio`) the baseline, and
    `delta` (in `unit`) away from it."""

    ratio: float | None
    delta: float
    unit: str
    why: str

    def text(self) -> str:
        delta = f"+/-{self.delta:g} {self.unit}"
        return f"x{self.ratio:g} baseline and {delta}" if self.ratio else delta

    def passed(self, value: float, baseline: float) -> bool:
        moved = abs(value - baseline) >= self.delta
        if self.ratio is None:
            return moved
        if value >= baseline:
            return moved and value >= baseline * self.ratio
        return moved and value * self.ratio <= baseline


THRESHOLDS: dict[str, Threshold] = {
    "request_rate": Threshold(
        1.3, 0.2, "requests_per_second",
        "diurnal drift and ordinary bursts move a model's rate by up to a fifth within the "
        "hour; 0.2 req/s keeps an idle model's single requests from counting",
    ),
    "prompt_len_mean": Threshold(
        1.15, 300.0, "tokens",
        "fleetsim's long-prompt surge (5-12 % of requests become ~12k-token prompts) lifts "
        "the mean by a tenth or more and 300 tokens; a quiet fleet's chat and RAG mix moves "
        "a 5-minute mean by under a tenth, and +300 tokens keeps short-prompt models quiet",
    ),
    "prompt_len_p95": Threshold(
        1.3, 500.0, "tokens",
        "a p95 from 1-2-5 buckets is interpolated inside a bucket twice as wide as its "
        "lower edge: only a move past a good part of a bucket is a move",
    ),
    "output_len_mean": Threshold(
        1.3, 100.0, "tokens",
        "output lengths follow the tenants' max_tokens: a batch tenant's share swinging "
        "moves the mean by a fifth, a new mix by more"
    ),
    "output_len_p95": Threshold(1.3, 200.0, "tokens", "as for prompt p95, with shorter outputs"),
    "share": Threshold(
        None, 0.1, "ratio",
        "a mix (finish reasons, models, tenants) shifted when one part's share of requests "
        "moved by ten points; smaller drifts come and go with the hour",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Shift:
    figure: Figure
    changed: bool  # past its threshold
    ratio: float | None  # value / baseline, when both are known and the baseline is not 0
    since: str | None  # ISO UTC change point, when one was found

    def to_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure.to_dict(),
            "changed": self.changed,
            "ratio": self.ratio,
            "since": self.since,
        }


@dataclass(frozen=True)
class _Dimension:
    name: str  # figure name, unit in it
    threshold: str  # key of THRESHOLDS
    spec: Spec  # the statistic, without its range
    statistic: str  # for `source`
    by: str | None = None  # a mix: the label its shares are of


def _dimensions(model_name: str | None) -> list[_Dimension]:
    found = [
        _Dimension("request_rate_requests_per_second", "request_rate",
                   Rate("request_success"), "rate"),
        _Dimension("prompt_len_mean_tokens", "prompt_len_mean", Mean("prompt_len"), "mean"),
        _Dimension("prompt_len_p95_tokens", "prompt_len_p95", Quantile("prompt_len", 0.95), "p95"),
        _Dimension("output_len_mean_tokens", "output_len_mean", Mean("output_len"), "mean"),
        _Dimension("output_len_p95_tokens", "output_len_p95", Quantile("output_len", 0.95), "p95"),
        _Dimension("finish_reason_share_ratio", "share",
                   Rate("request_success", by=("finished_reason",)), "share of rate",
                   "finished_reason"),
        _Dimension("tenant_share_ratio", "share", Rate("gateway_requests", by=("tenant",)),
                   "share of gateway rate", "tenant"),
    ]  # fmt: skip
    if model_name is None:
        model_mix = _Dimension("model_share_ratio", "share",
                               Rate("request_success", by=("model_name",)), "share of rate",
                               "model_name")  # fmt: skip
        found.insert(5, model_mix)
    return found


def _ranged(spec: Spec, seconds: float) -> Spec:
    assert isinstance(spec, Rate | Mean | Quantile)
    return replace(spec, window_seconds=seconds)


def _iso(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z")


def workload_shifts(
    fleet: Fleet,
    *,
    model_name: str | None,
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
    backend: Backend = "local",
) -> tuple[Shift, ...]:
    """Every workload dimension of the scope, incident window against baseline, in the
    order of `_dimensions` (a mix: one Shift per label value, largest incident share
    first); a dimension the fleet does not expose is left out, one without data in a span
    has None there."""
    (start, end), (b_start, b_end) = window, baseline
    spans = {"incident": (start, end), "baseline": (b_start, b_end)}
    dimensions = _dimensions(model_name)
    specs: dict[str, Spec] = {}
    windows: dict[str, Window] = {}
    for dim in dimensions:
        for span, (s, e) in spans.items():
            seconds = max((e - s).total_seconds(), STEP_SECONDS)
            specs[f"{dim.name}/{span}"] = _ranged(dim.spec, seconds)
            windows[f"{dim.name}/{span}"] = Window(e, e, STEP_SECONDS)
        specs[f"{dim.name}/series"] = _ranged(dim.spec, SERIES_RANGE_SECONDS)
    series_window = Window(min(b_start, start), max(b_end, end), STEP_SECONDS)
    results = run_queries(
        specs, scope=Scope(fleet, model_name), window=series_window, backend=backend,
        windows=windows,
    )  # fmt: skip
    where = (
        f"{backend}; incident {_iso(start.timestamp())}..{_iso(end.timestamp())}, baseline "
        f"{_iso(b_start.timestamp())}..{_iso(b_end.timestamp())}"
    )
    requests = _requests(results, "request_rate_requests_per_second", start, end)
    shifts: list[Shift] = []
    for dim in dimensions:
        found = {span: results[f"{dim.name}/{span}"] for span in (*spans, "series")}
        if not any(r.has_data for r in found.values()) and found["incident"].reason in (
            "not-exposed", "not-joined", "removed", "not-in-vllm",
        ):  # fmt: skip
            continue  # not a dimension of this fleet (no gateway, say): nothing to compare
        if dim.by is None:
            shifts.append(_scalar(dim, found, where, b_end, requests))
        else:
            lengths = {k: max((e - s).total_seconds(), STEP_SECONDS) for k, (s, e) in spans.items()}
            shifts.extend(_mix(dim, found, where, b_end, lengths))
    return tuple(shifts)


def _requests(
    results: Mapping[str, QueryResult], name: str, start: datetime, end: datetime
) -> float | None:
    rate = _point(results.get(f"{name}/incident"))
    return None if rate is None else rate * (end - start).total_seconds()


def _point(result: QueryResult | None) -> float | None:
    """The single value of a one-point, ungrouped result (None when it has none)."""
    if result is None or not result.has_data or not result.series:
        return None
    return result.series[0].values[-1]


def _source(dim: _Dimension, result: QueryResult, where: str) -> str:
    text = f"{dim.statistic} of {result.resolved_name or spec_keys(dim.spec)[0]} ({where})"
    if not result.has_data:
        text += f"; incident: no data ({result.reason or result.status}: {result.message})"
    return text


def _scalar(
    dim: _Dimension, found: Mapping[str, QueryResult], where: str, b_end: datetime,
    requests: float | None,
) -> Shift:  # fmt: skip
    rule = THRESHOLDS[dim.threshold]
    value, base = _point(found["incident"]), _point(found["baseline"])
    source = _source(dim, found["incident"], where)
    if not found["baseline"].has_data:
        source += f"; baseline: no data ({found['baseline'].reason}: {found['baseline'].message})"
    bound = _bound(found["incident"], rule.unit)
    figure = Figure(dim.name, rule.unit, value, base, threshold=rule.text(), source=source,
                    requests=requests, bound=bound)  # fmt: skip
    changed = value is not None and base is not None and rule.passed(value, base)
    series = (
        found["series"].series[0] if found["series"].has_data and found["series"].series else None
    )
    since = _change_point(series.timestamps, series.values, b_end, rule) if series else None
    return Shift(figure, changed, _ratio(value, base), since if changed else None)


def _bound(result: QueryResult, unit: str) -> str:
    """ "> N tokens" when the quantile lies past the last finite bucket edge."""
    if not result.has_data or not result.series:
        return ""
    series = result.series[0]
    if series.values[-1] is None and series.lower is not None and series.lower[-1] is not None:
        return f"> {series.lower[-1]:g} {unit}"
    return ""


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or base is None or base == 0:
        return None
    return value / base


def _shares(
    result: QueryResult, label: str, seconds: float
) -> tuple[tuple[float, ...], dict[str, list[float | None]]]:
    """Each label value's share of the total at each point (None where the span of
    `seconds` holds too few requests to share: see MIN_SHARE_REQUESTS)."""
    if not result.has_data or not result.series:
        return (), {}
    stamps = result.series[0].timestamps
    totals = [
        sum(v for v in column if v is not None)
        for column in zip(*(s.values for s in result.series), strict=True)
    ]
    shares: dict[str, list[float | None]] = {}
    for series in result.series:
        part = shares.setdefault(series.labels.get(label, ""), [0.0] * len(stamps))
        for i, v in enumerate(series.values):
            current = part[i]
            if totals[i] * seconds < MIN_SHARE_REQUESTS or current is None:
                part[i] = None
            else:
                part[i] = current + (v or 0.0) / totals[i]
    return stamps, shares


def _mix(
    dim: _Dimension, found: Mapping[str, QueryResult], where: str, b_end: datetime,
    spans: Mapping[str, float],
) -> list[Shift]:  # fmt: skip
    rule = THRESHOLDS[dim.threshold]
    label = dim.by or ""
    now = _shares(found["incident"], label, spans["incident"])[1]
    before = _shares(found["baseline"], label, spans["baseline"])[1]
    stamps, over_time = _shares(found["series"], label, SERIES_RANGE_SECONDS)
    source = _source(dim, found["incident"], where)
    if not found["baseline"].has_data:
        source += f"; baseline: no data ({found['baseline'].reason}: {found['baseline'].message})"
    shifts = []
    for part in sorted(set(now) | set(before), key=lambda p: -(now.get(p, [0.0])[-1] or 0.0)):
        value = now[part][-1] if part in now else (0.0 if now else None)
        base = before[part][-1] if part in before else (0.0 if before else None)
        figure = Figure(f"{dim.name}[{part}]", rule.unit, value, base, threshold=rule.text(),
                        source=source)  # fmt: skip
        changed = value is not None and base is not None and rule.passed(value, base)
        since = None
        if changed and part in over_time:
            since = _change_point(stamps, over_time[part], b_end, rule)
        shifts.append(Shift(figure, changed, _ratio(value, base), since))
    return shifts


def _change_point(
    stamps: Sequence[float], values: Sequence[float | None], b_end: datetime, rule: Threshold
) -> str | None:
    """The first point of the longest run of points past `rule` from the baseline points'
    mean (see the module docstring); None when the baseline has no points or no run lasts."""
    cut = b_end.timestamp()
    before = [v for t, v in zip(stamps, values, strict=True) if t <= cut and v is not None]
    if not before:
        return None
    mean = math.fsum(before) / len(before)
    best: tuple[int, int] | None = None  # (points, first index)
    first: int | None = None
    count = misses = 0
    for i, v in enumerate([*values, None, None]):
        if v is not None and rule.passed(v, mean):
            if first is None:
                first, count = i, 0
            count, misses = count + 1, 0
            continue
        if first is None:
            continue
        misses += 1
        if misses > 1 or i >= len(values):  # a second point back in: the run is over
            if count >= MIN_RUN_POINTS and (best is None or count > best[0]):
                best = (count, first)
            first, count, misses = None, 0, 0
    return None if best is None else _iso(stamps[best[1]])
