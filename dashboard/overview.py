"""The fleet overview: every panel's queries in one parallel round-trip, as JSON-safe data."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from dashboard.figures import line_figure
from dashboard.panels import PANELS, Panel
from dashboard.queries import QueryResult, Scope, Window, run_queries
from inventory.models import Fleet

Backend = Literal["local", "prometheus"]


@dataclass(frozen=True)
class OverviewRequest:
    fleet: Fleet
    window: Window
    backend: Backend
    model_name: str | None = None


def _panel_state(panel: Panel, results: dict[str, QueryResult]) -> dict[str, Any]:
    statuses = {r.status for r in results.values()}
    usable = {name: r for name, r in results.items() if r.status in ("ok", "partial")}
    notes = sorted({r.message for r in results.values() if r.message})
    if not usable:
        status = "error" if "error" in statuses else "unavailable"
        return {"status": status, "notes": notes, "figure": None}
    if not any(r.series for r in usable.values()):
        # Exposed, but nothing in this window (say, a counter with one sample so far).
        return {
            "status": "unavailable",
            "notes": notes or ["no data in this window"],
            "figure": None,
        }
    return {
        "status": "partial" if statuses - {"ok"} else "ok",
        "notes": notes,
        "figure": line_figure(usable, unit=panel.unit),
    }


def overview_compute(request: OverviewRequest) -> dict[str, Any]:
    """All panels of the overview. Unavailable panels say why; nothing is drawn as zero."""
    started = time.perf_counter()
    specs = {f"{panel.id}|{name}": spec for panel in PANELS for name, spec in panel.traces.items()}
    scope = Scope(request.fleet, model_name=request.model_name)
    results = run_queries(specs, scope=scope, window=request.window, backend=request.backend)
    panels = []
    for panel in PANELS:
        mine = {name: results[f"{panel.id}|{name}"] for name in panel.traces}
        panels.append(
            {"id": panel.id, "group": panel.group, "title": panel.title, "unit": panel.unit}
            | _panel_state(panel, mine)
        )
    return {
        "fleet": request.fleet.slug,
        "backend": request.backend,
        "window": {
            "start": _iso(request.window.start),
            "end": _iso(request.window.end),
            "step_seconds": request.window.step_seconds,
        },
        "panels": panels,
        "computed_seconds": round(time.perf_counter() - started, 4),
    }


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
    state = _panel_state(panel, results)
    return {
        "panel": panel.id,
        "status": state["status"],
        "notes": state["notes"],
        "resolved": {name: r.resolved_name for name, r in results.items()},
        "traces": traces,
    }


def overview_json(payload: dict[str, Any]) -> str:
    # allow_nan=False: a stray NaN must fail here, not in the browser's JSON.parse.
    return json.dumps(payload, allow_nan=False, separators=(",", ":"))


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
