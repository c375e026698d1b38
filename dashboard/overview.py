"""The fleet overview: every panel's queries in one parallel round-trip, as JSON-safe data."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import orjson
from django.utils import timezone

from dashboard.figures import panel_figure
from dashboard.freshness import freshness_annotate
from dashboard.panels import PANELS, Group, Panel
from dashboard.replicas import (
    BASELINE_SPECS,
    REPLICA_SPECS,
    baseline_windows,
    replica_table,
    replica_table_from,
)
from inventory.catalog import CATALOG
from inventory.models import EndpointInventory, Fleet
from queries import (
    ENDPOINT_KIND_FOR_SOURCE,
    Backend,
    QueryResult,
    Scope,
    Window,
    page_deadline,
    run_queries,
    spec_keys,
)

TABLE = "replicas"  # spec-name prefix of the replica table's queries


@dataclass(frozen=True)
class OverviewRequest:
    fleet: Fleet
    window: Window
    backend: Backend
    model_name: str | None = None
    # One replica (host:port, as in Prometheus' `instance` label), or the whole fleet.
    instance: str | None = None
    # One panel group's page, or the whole overview (which also carries the replica table).
    group: Group | None = None


Kinds = Callable[[], set[str]]


def scope_kinds(scope: Scope) -> Kinds:
    """The detected kinds (engine, dcgm, router, ...) of the scope's endpoints with an
    inventory, read once and only if asked."""

    @cache
    def kinds() -> set[str]:
        rows = EndpointInventory.objects.filter(
            endpoint__fleet=scope.fleet, endpoint__enabled=True
        ).values_list("endpoint__instance", "detected_kind")
        wanted = None if scope.instances is None else set(scope.instances)
        return {kind for instance, kind in rows if wanted is None or instance in wanted}

    return kinds


def _requirements(panel: Panel, results: dict[str, QueryResult], kinds: Kinds) -> list[str]:
    """What the catalog says enables the flag-gated metrics of a panel (a vLLM flag or
    setting), in trace order, each once. Empty when one is read from a kind of endpoint
    the scope has none of: with no DCGM exporter at all, that is why, not a flag."""
    keys = [
        key
        for name, result in results.items()
        if result.reason == "flag-gated" and name in panel.traces
        for key in spec_keys(panel.traces[name])
        if key in CATALOG
    ]
    if any(ENDPOINT_KIND_FOR_SOURCE[CATALOG[key].source_kind] not in kinds() for key in keys):
        return []
    return list(dict.fromkeys(CATALOG[key].requires for key in keys if CATALOG[key].requires))


def _panel_state(panel: Panel, results: dict[str, QueryResult], kinds: Kinds) -> dict[str, Any]:
    """`status`: ok, partial, error (a source or query failed), not-configured (every
    metric it reads needs a flag or setting this fleet runs without: `requires` says
    which, from the catalog) or unavailable (no data, `reasons` say why)."""
    statuses = {r.status for r in results.values()}
    usable = {name: r for name, r in results.items() if r.status in ("ok", "partial")}
    # Messages say why (or which fallback); warnings say what is incomplete (failed
    # scrapes, a widened step, Prometheus' own warnings): the on-call needs both.
    notes = sorted({r.message for r in results.values() if r.message})
    notes += sorted({w for r in results.values() for w in r.warnings} - set(notes))
    reasons = sorted({r.reason for r in results.values() if r.reason})
    if not usable:
        if "error" in statuses:
            status = "error"
        elif reasons == ["flag-gated"] and (requires := _requirements(panel, results, kinds)):
            # Not a failure: this fleet's vLLM runs without what the panel needs.
            return {
                "status": "not-configured",
                "reasons": reasons,
                "notes": notes,
                "requires": requires,
                "figure": None,
            }
        else:
            status = "unavailable"
        return {"status": status, "reasons": reasons, "notes": notes, "figure": None}
    if not any(r.series for r in usable.values()):
        # Exposed, but nothing in this window (say, a counter with one sample so far).
        return {
            "status": "unavailable",
            "reasons": reasons or ["no-data"],
            "notes": notes or ["no data in this window"],
            "figure": None,
        }
    drawn = panel_figure(panel.kind, usable, unit=panel.unit)
    notes += [note for note in drawn.notes if note not in notes]
    return {
        "status": "partial" if statuses - {"ok"} or drawn.incomplete else "ok",
        "reasons": reasons,
        "notes": notes,
        "figure": drawn.figure,
    }


def overview_compute(request: OverviewRequest) -> dict[str, Any]:
    """The panels of the overview (or of one group's page). Unavailable panels say why,
    failing sources say since when, and nothing is drawn as zero.

    Its Prometheus queries share one deadline (PROMETHEUS_BATCH_DEADLINE_SECONDS), whether
    a viewer asked or the live job did: a slow Prometheus costs a page that long at most,
    and the panels it did not answer for say so."""
    with page_deadline():
        return _overview(request)


def _overview(request: OverviewRequest) -> dict[str, Any]:
    started = time.perf_counter()
    shown = [p for p in PANELS if request.group is None or p.group == request.group]
    specs = {f"{panel.id}|{name}": spec for panel in shown for name, spec in panel.traces.items()}
    with_table = request.group is None
    # The table compares replicas, so it always covers the whole fleet; with no replica
    # chosen it shares the panels' round-trip (one store read, one parallel batch).
    table_alongside = with_table and request.instance is None
    windows: dict[str, Window] = {}
    if table_alongside:
        # Evaluated at the window's end only.
        at_end = Window(request.window.end, request.window.end, request.window.step_seconds)
        for name, spec in REPLICA_SPECS.items():
            specs[f"{TABLE}|{name}"] = spec
            windows[f"{TABLE}|{name}"] = at_end
        # A model with too few replicas for a median is compared with its previous hour.
        for name, window in baseline_windows(request.window.end).items():
            specs[f"{TABLE}|{name}"] = BASELINE_SPECS[name]
            windows[f"{TABLE}|{name}"] = window
    instances = None if request.instance is None else (request.instance,)
    scope = Scope(request.fleet, model_name=request.model_name, instances=instances)
    results = run_queries(
        specs, scope=scope, window=request.window, backend=request.backend, windows=windows
    )
    panels = []
    kinds = scope_kinds(scope)
    for panel in shown:
        mine = {name: results[f"{panel.id}|{name}"] for name in panel.traces}
        panels.append(
            {"id": panel.id, "group": panel.group, "title": panel.title, "unit": panel.unit}
            | _panel_state(panel, mine, kinds)
        )
    payload: dict[str, Any] = {
        "fleet": request.fleet.slug,
        "backend": request.backend,
        "window": {
            "start": _iso(request.window.start),
            "end": _iso(request.window.end),
            "step_seconds": request.window.step_seconds,
        },
        "instance": request.instance,
        "panels": panels,
    }
    if table_alongside:
        table = {name: results[f"{TABLE}|{name}"] for name in (*REPLICA_SPECS, *BASELINE_SPECS)}
        payload["replicas"] = replica_table_from(
            request.fleet, results=table, at=request.window.end
        )
    elif with_table:
        payload["replicas"] = replica_table(
            request.fleet,
            end=request.window.end,
            backend=request.backend,
            model_name=request.model_name,
        )
    freshness_annotate(
        payload,
        fleet=request.fleet,
        backend=request.backend,
        now=timezone.now(),
        view=f"{request.model_name or ''}|{request.instance or ''}",
    )
    payload["computed_seconds"] = round(time.perf_counter() - started, 4)
    return payload


def overview_slice(payload: dict[str, Any], group: Group) -> dict[str, Any]:
    """One group's page cut from a whole overview: its panels, without the replica table
    (which only the overview shows), as `overview_compute` would give for `group` from the
    same results. The live job cuts these so a group tab polls its own panels."""
    cut = {key: value for key, value in payload.items() if key != "replicas"}
    cut["panels"] = [panel for panel in payload["panels"] if panel["group"] == group]
    return cut


def panel_compute(
    panel: Panel, *, fleet: Fleet, window: Window, backend: Backend, model_name: str | None = None
) -> dict[str, Any]:
    """One panel's numbers (for `manage.py panel`): status, notes, and each series' values."""
    scope = Scope(fleet, model_name=model_name)
    results = run_queries(dict(panel.traces), scope=scope, window=window, backend=backend)
    traces = [
        {
            "name": name if not series.labels else f"{name} {dict(series.labels)}",
            "labels": dict(series.labels),
            "timestamps": list(series.timestamps),
            "values": list(series.values),
        }
        for name, result in results.items()
        for series in result.series
    ]
    state = _panel_state(panel, results, scope_kinds(scope))
    return {
        "panel": panel.id,
        "status": state["status"],
        "notes": state["notes"],
        "resolved": {name: r.resolved_name for name, r in results.items()},
        "traces": traces,
    }


def overview_json(payload: dict[str, Any]) -> str:
    """`payload` as compact JSON text: what the views return, the live push sends and
    the cache holds.

    Strict JSON whatever the numbers: NaN and infinities come out as `null` (a gap, as the
    figures draw them), never as the bare `NaN` token the browser's JSON.parse rejects.
    numpy numbers are written as plain numbers, non-ASCII text as itself (no \\u escapes).
    A key that is not a string, or an object orjson has no JSON form for, raises TypeError.
    """
    # orjson: about ten times json.dumps on a 32-replica overview. Text, not bytes: the
    # websocket sends text frames, and the views and the cache share this one value.
    return orjson.dumps(_axes_shared(payload), option=orjson.OPT_SERIALIZE_NUMPY).decode()


def _axes_shared(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with each figure's time axis written once (`figure.x`) where every trace
    has the same one: a 32-replica overview's traces repeat their 241 timestamps 620 times,
    two thirds of its 5.8 MB, which every push then compresses once per socket. The page
    puts the axis back on each trace (static/js/fleet_overview/payload.js `withSharedAxis`).
    The payload itself is left as it is (the cache and the tests read it)."""
    panels = payload.get("panels")
    if not isinstance(panels, list):
        return payload
    return {
        **payload,
        "panels": [
            {**p, "figure": _figure_axis_shared(p["figure"])} if p.get("figure") else p
            for p in panels
        ],
    }


def _figure_axis_shared(figure: dict[str, Any]) -> dict[str, Any]:
    data = figure.get("data") or []
    first = data[0].get("x") if data else None
    if len(data) < 2 or not isinstance(first, list):
        return figure
    if any(trace.get("x") != first for trace in data[1:]):
        return figure
    return {**figure, "x": first, "data": [{k: v for k, v in t.items() if k != "x"} for t in data]}


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
