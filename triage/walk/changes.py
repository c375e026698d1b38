"""What changed on a fleet's engine replicas, and in its configuration, around an incident
window.

    changes_in(fleet, model_name="llama-3.1-8b-instruct", start=t0, end=t1, backend="local")

Five kinds, each read from where the fleet's history really is, and each description says
which:
- restart: a new `process_start_time_seconds` (read through `queries.run_queries`, so on
  either backend), a counter reset in the frames FleetScope stored, or an engine that
  answered scrapes again after failing them. Evidence of one restart on one replica
  (the new process' start time, its counters restarting from zero, its first answered
  scrape after loading weights) is folded into one Change, timed at the earliest of it.
- dialect: the vLLM naming era a replica's stored layout speaks (`detect_dialect`, through
  `blindspots.history.layout_dialect`) differs from the last one it spoke.
- cache_config: a `vllm:cache_config_info` label (num_gpu_blocks, block_size...) took
  another value.
- replicas: an engine stopped answering scrapes, first answered in the window, or started
  or stopped serving the model (its series' model_name labels).
- configuration: a row of FleetScope's own configuration (an SLO or its objective, the
  fleet, an endpoint, a tenant rule, a price, a runbook...) created, changed or deleted,
  from the audit trail (`audit.selectors.changes_between`), with who did it.
The layouts and scrape runs exist only for endpoints FleetScope scraped or imported: a
fleet read from Prometheus alone gets restarts only, and one `unknown` Change saying so.
Nothing is inferred beyond what was recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from audit.selectors import changes_between
from audit.text import entry_text
from blindspots.history import DIALECT_TEXT, layout_dialect
from fleetscope.lib.utc import utc_iso
from inventory.gpus import engines_serving
from inventory.models import Endpoint, EndpointKind, Fleet, ScrapeRun, ScrapeStatus
from inventory.store import LayoutRun, Series, layout_runs, store_read
from queries import Backend, Gauge, Scope, Window, run_queries
from triage.walk.types import Change

# Points of the process start time series: fine enough to tell restarts a minute apart,
# coarse enough that a 28-day window stays far under Prometheus' point limit.
STEP_SECONDS = 60.0
# How far before the window the layouts are read, for the layout a replica started the
# window with (a layout only changes when its series do, so its run may begin hours back).
LAYOUT_LOOKBACK = timedelta(hours=6)
# A restart's evidence spreads over the weight load: the crash, the new process' start,
# its first answered scrape. Evidence closer than this on one replica is one restart.
RESTART_MERGE_SECONDS = 600.0
# Counters every vLLM engine of the catalog's dialects has and every request moves: one of
# them going down between two stored scrapes is a counter reset, i.e. a new process.
RESET_COUNTERS = frozenset(
    {"vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total"}
)
CACHE_CONFIG = "vllm:cache_config_info"
UNDATED = frozenset({"unknown", "not-vllm"})  # dialects that date nothing: skipped
NAMES_SHOWN = 3


@dataclass(frozen=True)
class _Evidence:
    """One sign of a restart on one instance."""

    instance: str
    at: float  # unix seconds
    text: str


def changes_in(
    fleet: Fleet,
    *,
    model_name: str | None,
    start: datetime,
    end: datetime,
    backend: Backend = "local",
) -> tuple[Change, ...]:
    """What changed on `fleet`'s engine replicas (those serving `model_name`, when given)
    and in its configuration between `start` and `end` (UTC-aware), oldest first; never
    raises for missing data."""
    engines = dict(
        Endpoint.objects.enabled()
        .filter(fleet=fleet, kind=EndpointKind.VLLM)
        .values_list("pk", "instance")
    )
    runs = layout_runs(endpoint_ids=list(engines), start=start - LAYOUT_LOOKBACK, end=end)
    if model_name is not None:
        engines = _serving(fleet, engines, runs, model_name)
    # FleetScope's own configuration changes whatever the engines did, or if there are none.
    changes = _configuration(fleet, start, end)
    if not engines:
        return tuple(changes)
    evidence = _process_starts(fleet, engines, start, end, backend)
    recorded = any(runs.get(endpoint_id) for endpoint_id in engines)
    if recorded:
        evidence += _counter_resets(engines, start, end)
        down, back = _scrape_changes(engines, start, end, model_name)
        changes += down
        evidence += back
        for endpoint_id, instance in engines.items():
            history = runs.get(endpoint_id, [])
            changes += _layout_changes(instance, history, start, end, model_name)
    else:
        changes.append(
            Change(
                "unknown", None, "",
                "FleetScope stored no layouts or scrapes of these engines for this window "
                f"(backend {backend}): dialect, cache config and replica changes were not read",
            )
        )  # fmt: skip
    changes += _restarts(evidence)
    return tuple(sorted(changes, key=lambda c: (c.at or "", c.instance, c.kind)))


def _configuration(fleet: Fleet, start: datetime, end: datetime) -> list[Change]:
    return [
        Change("configuration", utc_iso(entry.at), "", entry_text(entry))
        for entry in changes_between(fleet, start, end)
    ]


def _iso(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z")


def _serving(
    fleet: Fleet, engines: Mapping[int, str], runs: Mapping[int, Sequence[LayoutRun]], model: str
) -> dict[int, str]:
    """The engines whose layouts around the window carry `model`; by their latest layout
    when none was stored in that span (the layouts may have been pruned)."""
    found = {
        endpoint_id: instance
        for endpoint_id, instance in engines.items()
        if any(_serves(run.series, model) for run in runs.get(endpoint_id, ()))
    }
    if found:
        return found
    latest = engines_serving(fleet, model, set(engines.values()))
    return {k: v for k, v in engines.items() if v in latest}


def _serves(series: Sequence[Series], model: str) -> bool:
    return any(labels.get("model_name") == model for _, labels in series)


def _process_starts(
    fleet: Fleet, engines: Mapping[int, str], start: datetime, end: datetime, backend: Backend
) -> list[_Evidence]:
    """A new `process_start_time_seconds` value per instance: its value is the new
    process' start, so that is the time given (clamped to the point that showed it)."""
    spec = Gauge("process_start_time", agg="max", by=("instance",))
    # By instance, not by model: process series carry no model_name label.
    scope = Scope(fleet, instances=tuple(sorted(engines.values())))
    result = run_queries(
        {"start": spec}, scope=scope, window=Window(start, end, STEP_SECONDS), backend=backend
    )["start"]
    found = []
    for series in result.series:
        instance = series.labels.get("instance", "")
        previous: float | None = None
        for at, value in zip(series.timestamps, series.values, strict=True):
            if value is None or value == previous:
                continue
            began = min(value, at)
            if previous is not None or value >= start.timestamp():
                was = f" (was {_iso(previous)})" if previous is not None else ""
                text = f"process_start_time_seconds became {_iso(value)}{was}, read on {backend}"
                found.append(_Evidence(instance, began, text))
            previous = value
    return found


def _counter_resets(engines: Mapping[int, str], start: datetime, end: datetime) -> list[_Evidence]:
    """Counters that went down between two stored scrapes, per instance and scrape."""
    read = store_read(endpoints=engines, names=RESET_COUNTERS, start=start, end=end)
    resets: dict[tuple[str, float], set[str]] = {}
    for series in read.series:
        instance = series.labels.get("instance", "")
        for index in np.flatnonzero(np.diff(series.values) < 0).tolist():
            resets.setdefault((instance, float(series.times[index + 1])), set()).add(series.name)
    return [
        _Evidence(instance, at, f"{', '.join(sorted(names))} reset (stored scrape)")
        for (instance, at), names in sorted(resets.items())
    ]


def _scrape_changes(
    engines: Mapping[int, str], start: datetime, end: datetime, model_name: str | None
) -> tuple[list[Change], list[_Evidence]]:
    """From FleetScope's scrape runs: each engine going down (a replicas Change, with how
    many of the scope's engines answered before and after) and each coming back (restart
    evidence), and engines first scraped in the window."""
    ids = list(engines)
    before = {}
    for endpoint_id in ids:
        last = (
            ScrapeRun.objects.filter(endpoint_id=endpoint_id, started_at__lt=start)
            .order_by("-started_at")
            .values_list("status", flat=True)
            .first()
        )
        before[endpoint_id] = last
    rows = (
        ScrapeRun.objects.filter(endpoint_id__in=ids, started_at__gte=start, started_at__lte=end)
        .order_by("started_at", "endpoint_id")
        .values_list("endpoint_id", "started_at", "status", "error_kind")
    )
    # Engines never scraped before the window count as answering once they first answer.
    answering = {i for i, status in before.items() if status == ScrapeStatus.SUCCEEDED}
    state = dict(before)
    # endpoint -> (when it went down, None: before the window; failed scrapes since)
    went_down: dict[int, tuple[float | None, int]] = {
        i: (None, 0) for i, status in before.items() if status == ScrapeStatus.FAILED
    }
    of_model = f" serving {model_name}" if model_name else ""
    changes: list[Change] = []
    evidence: list[_Evidence] = []
    for endpoint_id, started_at, status, error_kind in rows:
        instance, at = engines[endpoint_id], started_at.timestamp()
        was = state[endpoint_id]
        state[endpoint_id] = status
        if status == ScrapeStatus.FAILED:
            if endpoint_id in went_down:
                when, failed = went_down[endpoint_id]
                went_down[endpoint_id] = (when, failed + 1)
                continue
            went_down[endpoint_id] = (at, 1)
            if was != ScrapeStatus.SUCCEEDED:
                continue  # down since before the window, or never answered: no change seen
            answering.discard(endpoint_id)
            text = (
                f"{instance} stopped answering scrapes ({error_kind or 'failed'}); "
                f"{len(answering) + 1} -> {len(answering)} of {len(engines)} engine "
                f"replicas{of_model} answering (FleetScope's scrape runs)"
            )
            changes.append(Change("replicas", _iso(at), instance, text))
        elif was != ScrapeStatus.SUCCEEDED:
            answering.add(endpoint_id)
            count = f"{len(answering)} of {len(engines)} engine replicas{of_model} answering"
            if was is None:
                text = f"{instance} answered its first scrape; {count} (FleetScope's scrape runs)"
                changes.append(Change("replicas", _iso(at), instance, text))
                continue
            when, failed = went_down.pop(endpoint_id, (None, 0))
            since = f" since {_iso(when)}" if when is not None else " since before the window"
            text = f"answered scrapes again after {failed} failed{since}; {count}"
            evidence.append(_Evidence(instance, at, text))
    for endpoint_id, (when, failed) in went_down.items():
        if state[endpoint_id] == ScrapeStatus.FAILED:
            instance = engines[endpoint_id]
            since = "before the window" if when is None else _iso(when)
            text = (
                f"{instance} still down at the window's end ({failed} failed scrapes in it, "
                f"down since {since})"
            )
            changes.append(Change("replicas", _iso(end.timestamp()), instance, text))
    return changes, evidence


def _restarts(evidence: Iterable[_Evidence]) -> list[Change]:
    """One restart Change per cluster of evidence on one instance, at its earliest time."""
    found: list[Change] = []
    by_instance: dict[str, list[_Evidence]] = {}
    for item in evidence:
        by_instance.setdefault(item.instance, []).append(item)
    for instance, items in by_instance.items():
        items.sort(key=lambda e: e.at)
        clusters = [[items[0]]]
        for item in items[1:]:
            if item.at - clusters[-1][0].at <= RESTART_MERGE_SECONDS:
                clusters[-1].append(item)
            else:
                clusters.append([item])
        for cluster in clusters:
            texts = "; ".join(dict.fromkeys(e.text for e in cluster))
            found.append(Change("restart", _iso(cluster[0].at), instance, texts))
    return found


def _layout_changes(
    instance: str, history: Sequence[LayoutRun], start: datetime, end: datetime, model: str | None
) -> list[Change]:
    """Dialect, cache config and model changes between consecutive stored layouts of one
    engine, dated by the first frame of the layout that shows them."""
    found: list[Change] = []
    dialect: tuple[str, frozenset[str]] | None = None  # the last dated dialect, its names
    config: dict[str, dict[str, str]] | None = None  # engine -> cache config labels
    serving: bool | None = None
    for run in history:
        inside = start <= run.first_at <= end
        at = run.first_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
        names = frozenset(name for name, _ in run.series)
        spoken = layout_dialect(run.series)
        if spoken not in UNDATED:
            if dialect is not None and spoken != dialect[0] and inside:
                text = _dialect_text(dialect[0], spoken, dialect[1], names)
                found.append(Change("dialect", at, instance, text))
            dialect = (spoken, names)
        now = _cache_config(run.series)
        if now:
            if config is not None and inside and (text := _config_text(config, now)):
                found.append(Change("cache_config", at, instance, text))
            config = now
        if model is not None:
            serves = _serves(run.series, model)
            if serving is not None and serves != serving and inside:
                verb = "started" if serves else "stopped"
                text = f"{instance} {verb} serving {model} (its series' model_name labels)"
                found.append(Change("replicas", at, instance, text))
            serving = serves
    return found


def _dialect_text(before: str, after: str, old: frozenset[str], new: frozenset[str]) -> str:
    def few(names: Iterable[str]) -> str:
        listed = sorted(n for n in names if n.startswith("vllm:"))
        more = f" and {len(listed) - NAMES_SHOWN} more" if len(listed) > NAMES_SHOWN else ""
        return ", ".join(listed[:NAMES_SHOWN]) + more if listed else "none"

    return (
        f"vLLM dialect {before} -> {after} ({DIALECT_TEXT.get(before, before)} -> "
        f"{DIALECT_TEXT.get(after, after)}); names added: {few(new - old)}; removed: "
        f"{few(old - new)} (FleetScope's stored layouts)"
    )


def _cache_config(series: Sequence[Series]) -> dict[str, dict[str, str]]:
    return {
        labels.get("engine", ""): {k: v for k, v in labels.items() if k != "engine"}
        for name, labels in series
        if name == CACHE_CONFIG
    }


def _config_text(
    before: Mapping[str, Mapping[str, str]], after: Mapping[str, Mapping[str, str]]
) -> str:
    """The fields both layouts have that took another value, per engine; fields only one
    side has are left out, as each vLLM version has its own field set."""
    parts = []
    for engine in sorted(set(before) & set(after)):
        old, new = before[engine], after[engine]
        moved = [
            f"{k} {old[k]} -> {new[k]}" for k in sorted(set(old) & set(new)) if old[k] != new[k]
        ]
        if moved:
            where = f"engine {engine}: " if engine else ""
            parts.append(where + ", ".join(moved))
    return f"{CACHE_CONFIG} {'; '.join(parts)} (FleetScope's stored layouts)" if parts else ""
