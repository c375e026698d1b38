"""The event counts SLOs are computed from, read through the query seam in one batch per
selector: queries grow with the SLOs' distinct sources, not with replicas or SLOs.

A source is a histogram key (TTFT, ITL, TPOT, E2E: cumulative counts by bucket edge) or
`request_success` (counts by finished_reason) on one selector. For each source the batch
asks for its increase by edge (or reason) over every burn window and the SLO window at
one instant, by replica over the SLO window, hour by hour over the SLO window, and hour
by hour per replica over the last day (for mu_good).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from inventory.catalog import CATALOG
from inventory.models import Fleet
from inventory.selectors import scope_endpoints
from inventory.store import store_span
from queries import (
    Backend,
    Increase,
    QueryResult,
    ResolvedKey,
    Scope,
    Window,
    parse_le,
    promql_of,
    resolve_key,
    run_queries,
)
from slo.burn_policy import WINDOWS_SECONDS
from slo.evaluation.figures import duration_text

HOUR_SECONDS = 3600.0
DAY_SECONDS = 86_400.0
INSTANT_STEP_SECONDS = 60.0
INF = math.inf

# Cumulative counts by bucket edge (+Inf = every event), or counts by finished_reason.
# Keyed by float edges for a histogram, by reason strings for finishes: one source is one
# or the other, and the objective reading it knows which.
Counts = dict[Any, float]


@dataclass(frozen=True)
class Source:
    key: str
    model_name: str
    instances: tuple[str, ...]

    @property
    def group(self) -> str:
        """What the counts are split by: bucket edge, finish reason, or nothing ("")."""
        if self.key == "request_success":
            return "finished_reason"
        return "le" if CATALOG[self.key].type == "histogram" else ""

    def by(self, *labels: str) -> tuple[str, ...]:
        return tuple(label for label in (*labels, self.group) if label)

    def scope(self, fleet: Fleet) -> Scope:
        return Scope(fleet, self.model_name or None, self.instances or None)


@dataclass
class SourceCounts:
    source: Source
    resolved: ResolvedKey | None
    unavailable: str = ""
    windows: dict[float, Counts | None] = field(default_factory=dict)  # by window seconds
    per_instance: dict[float, dict[str, Counts]] = field(default_factory=dict)
    hourly: list[tuple[float, Counts | None]] = field(default_factory=list)
    hourly_per_instance: dict[str, list[tuple[float, Counts]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # queries that failed, and how
    queries: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Span:
    """How much of an SLO's window the backend can answer for its selector."""

    at: datetime
    window_seconds: float  # the SLO's window
    held_seconds: float  # what the evaluation covers (the store's span, locally)
    note: str


def first_sample(fleet: Fleet, instances: tuple[str, ...]) -> datetime | None:
    """The oldest sample the embedded store holds for these replicas (all when empty)."""
    endpoints = scope_endpoints(fleet=fleet, instances=instances or None)
    span = store_span([endpoint.endpoint_id for endpoint in endpoints])
    return None if span is None else span[0]


def held_span(*, backend: Backend, at: datetime, window_days: int, first: datetime | None) -> Span:
    """`first`: the store's oldest sample for the selector (read only on the local store)."""
    window_seconds = window_days * DAY_SECONDS
    if backend == "prometheus":
        return Span(at, window_seconds, window_seconds, f"{window_days} d from Prometheus")
    if first is None or first >= at:
        return Span(at, window_seconds, 0.0, "the embedded store holds no samples yet")
    held = min(window_seconds, (at - first).total_seconds())
    if held >= window_seconds:
        return Span(at, window_seconds, held, f"{window_days} d held locally")
    return Span(
        at,
        window_seconds,
        held,
        f"attainment over the {duration_text(held)} held locally, not the whole "
        f"{window_days} d window (read Prometheus for the whole window)",
    )


@dataclass(frozen=True)
class Reading:
    """What one selector's batch asks for, for all its SLOs at once."""

    at: datetime
    helds: frozenset[float]  # each SLO's window, cut to what the backend holds
    replica_rates: bool  # hour by hour per replica over the last day, for mu_good

    @property
    def windows(self) -> list[float]:
        """Every burn window and SLO window, each cut to the SLOs' held spans."""
        return sorted({min(w, held) for w in WINDOWS_SECONDS for held in self.helds} | self.helds)

    @property
    def hours(self) -> int:
        return int(max(self.helds, default=0.0) // HOUR_SECONDS)


def read_selector(
    fleet: Fleet, sources: Sequence[Source], *, backend: Backend, reading: Reading
) -> dict[Source, SourceCounts]:
    """Every source of one selector in one `run_queries` batch. Identical specs (windows
    cut to the same held span) are asked once."""
    scope = sources[0].scope(fleet)
    at = reading.at
    instant = Window(at, at, INSTANT_STEP_SECONDS)
    hours = reading.hours
    hourly = Window(at - timedelta(hours=hours), at, HOUR_SECONDS) if hours else None
    day_hours = min(hours, 24)
    last_day = Window(at - timedelta(hours=day_hours), at, HOUR_SECONDS) if day_hours else None
    specs: dict[str, Increase] = {}
    windows: dict[str, Window] = {}
    counts: dict[Source, SourceCounts] = {}
    helds = sorted(h for h in reading.helds if h > 0)
    for i, source in enumerate(sources):
        resolved = resolve_key(scope, source.key)
        if isinstance(resolved, QueryResult):
            counts[source] = SourceCounts(source, None, resolved.message or resolved.reason)
            continue
        counts[source] = SourceCounts(source, resolved)
        if not helds:
            continue
        if not source.group:  # a plain counter (output tokens): its totals are all it gives
            for seconds in helds:
                specs[f"{i}|w|{seconds}"] = Increase(source.key, window_seconds=seconds)
            continue
        for seconds in reading.windows:
            specs[f"{i}|w|{seconds}"] = Increase(source.key, by=source.by(), window_seconds=seconds)
        for seconds in helds:
            specs[f"{i}|inst|{seconds}"] = Increase(
                source.key, by=source.by("instance"), window_seconds=seconds
            )
        if hourly is not None:
            specs[f"{i}|hourly"] = Increase(source.key, by=source.by(), window_seconds=HOUR_SECONDS)
            windows[f"{i}|hourly"] = hourly
        if last_day is not None and reading.replica_rates:
            name = f"{i}|hinst"
            specs[name] = Increase(
                source.key, by=source.by("instance"), window_seconds=HOUR_SECONDS
            )
            windows[name] = last_day
    first_of: dict[tuple[Increase, Window], str] = {}
    alias = {
        n: first_of.setdefault((spec, windows.get(n, instant)), n) for n, spec in specs.items()
    }
    unique = {n: specs[n] for n in set(alias.values())}
    unique_windows = {n: w for n, w in windows.items() if n in unique}
    ran = run_queries(unique, scope=scope, window=instant, backend=backend,
                      windows=unique_windows)  # fmt: skip
    texts: dict[str, str | None] = {}
    if backend == "prometheus":
        shown = {n: spec for n, spec in unique.items() if n.split("|")[1] in ("w", "inst")}
        texts = promql_of(shown, scope=scope, window=instant, windows=unique_windows)
    for name in specs:
        result = ran[alias[name]]
        index, kind, *rest = name.split("|")
        source = sources[int(index)]
        into = counts[source]
        into.warnings.extend(result.warnings)
        if not result.has_data and result.reason not in ("no-data", ""):
            into.errors.append(f"{result.reason}: {result.message}")
        text = texts.get(name) if alias[name] == name else None
        if text is not None:
            into.queries.append(text)
        _take(into, kind, rest, result)
    for into in counts.values():
        into.warnings = list(dict.fromkeys(into.warnings))
        into.errors = list(dict.fromkeys(into.errors))
    return counts


def _take(into: SourceCounts, kind: str, rest: list[str], result: QueryResult) -> None:
    group = into.source.group
    if kind == "w":
        into.windows[float(rest[0])] = _last_counts(result, group).get("", None)
    elif kind == "inst":
        into.per_instance[float(rest[0])] = _last_counts(result, group, "instance")
    elif kind == "hourly":
        into.hourly = _by_step(result, group).get("", [])
    elif kind == "hinst":
        into.hourly_per_instance = {
            k: [(t, c) for t, c in steps if c is not None]
            for k, steps in _by_step(result, group, "instance").items()
        }


def _add(counts: dict, key: float | str, value: float) -> None:
    counts[key] = counts.get(key, 0.0) + value


def _group_key(labels: Mapping[str, str], group: str) -> float | str:
    # `le` compared as numbers: "2" and "2.0" (and "+Inf", "Inf") are one edge.
    if group == "le":
        return parse_le(labels.get("le", "nan"))
    return labels.get(group, "") if group else "all"


def _last_counts(result: QueryResult, group: str, by: str | None = None) -> dict[str, Counts]:
    """The last point of each series, summed per `by` value ("" when not split)."""
    found: dict[str, dict] = {}
    if not result.has_data:
        return {}
    for series in result.series:
        value = next((v for v in reversed(series.values) if v is not None), None)
        if value is None:
            continue
        key = _group_key(series.labels, group)
        if isinstance(key, float) and math.isnan(key):
            continue
        _add(found.setdefault(series.labels.get(by, "") if by else "", {}), key, value)
    return found


def _by_step(
    result: QueryResult, group: str, by: str | None = None
) -> dict[str, list[tuple[float, Counts | None]]]:
    if not result.has_data or not result.series:
        return {}
    stamps = result.series[0].timestamps
    found: dict[str, list[dict]] = {}
    for series in result.series:
        key = _group_key(series.labels, group)
        if isinstance(key, float) and math.isnan(key):
            continue
        steps = found.setdefault(series.labels.get(by, "") if by else "", [{} for _ in stamps])
        for step, value in zip(steps, series.values, strict=True):
            if value is not None:
                _add(step, key, value)
    return {k: [(t, c or None) for t, c in zip(stamps, v, strict=True)] for k, v in found.items()}
