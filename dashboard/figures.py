"""Plotly figure JSON for a panel, built as plain dicts (plotly's Python validation is slow
and adds nothing here: the browser's plotly.js is the renderer)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dashboard.queries import QueryResult


def _label(trace: str, labels: Mapping[str, str]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    if not shown:
        return trace
    return shown if trace.startswith("by ") else f"{trace} ({shown})"


def _clean(values: Sequence[float | None]) -> list[float | None]:
    # Gaps stay gaps: NaN and infinities become null, never a zero or a bare NaN token.
    return [v if v is not None and math.isfinite(v) else None for v in values]


def line_figure(
    results: Mapping[str, QueryResult], *, unit: str, thresholds: Mapping[str, float] | None = None
) -> dict[str, Any]:
    data: list[dict[str, Any]] = []
    for trace, result in results.items():
        for series in result.series:
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": _label(trace, series.labels),
                    # Milliseconds since the epoch: plotly reads them as UTC dates.
                    "x": [round(t * 1000) for t in series.timestamps],
                    "y": _clean(series.values),
                    "connectgaps": False,
                }
            )
    shapes = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": value,
            "y1": value,
            "line": {"dash": "dash", "width": 1, "color": "#c62828"},
            "name": name,
        }
        for name, value in (thresholds or {}).items()
    ]
    return {
        "data": data,
        "layout": {
            "margin": {"l": 50, "r": 10, "t": 10, "b": 30},
            "height": 220,
            # Hours and minutes only: the window note above the charts carries the date (UTC).
            "xaxis": {"type": "date", "tickformat": "%H:%M", "title": {"text": ""}},
            "yaxis": {"title": {"text": unit}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": -0.25},
            "shapes": shapes,
        },
    }
