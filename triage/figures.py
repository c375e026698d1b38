"""Plotly figures of a stored walk's frozen charts (`Walk.to_dict()["charts"]`), as plain
dicts: one line per replica over the baseline and the incident window, the two spans
shaded, gaps kept as gaps. Pure functions over the stored dict, so a walk frozen long ago
draws the same as today's. Times are UTC wall-clock text (`dashboard.figures.utc_times`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from dashboard.figures import DAY_MS, TWO_HOURS_MS, hover_template, plotly_text, utc_times

WINDOW_FILL = "rgba(198, 40, 40, 0.10)"
BASELINE_FILL = "rgba(93, 102, 115, 0.10)"
DAY_FILL = "rgba(93, 102, 115, 0.06)"


def _span(iso_span: Mapping[str, Any] | None, fill: str) -> dict[str, Any] | None:
    if not iso_span or not iso_span.get("start") or not iso_span.get("end"):
        return None
    start, end = (
        datetime.fromisoformat(str(iso_span[k]).replace("Z", "+00:00")).timestamp()
        for k in ("start", "end")
    )
    x0, x1 = utc_times((start, end))
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": x0,
        "x1": x1,
        "y0": 0,
        "y1": 1,
        "fillcolor": fill,
        "line": {"width": 0},
        "layer": "below",
    }


def chart_figure(chart: Mapping[str, Any], walk: Mapping[str, Any]) -> dict[str, Any]:
    """One frozen chart: a line per replica, the baseline shaded grey and the window red."""
    unit = str(chart.get("unit", ""))
    x = utc_times([float(t) for t in chart.get("t") or ()])
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": plotly_text(str(series.get("replica", ""))),
            "x": list(x),
            "y": list(series.get("v") or ()),
            "connectgaps": False,
            "hovertemplate": hover_template(unit),
        }
        for series in chart.get("series") or ()
    ]
    shapes = [
        shape
        for shape in (
            _span(walk.get("baseline"), BASELINE_FILL),
            _span(walk.get("window"), WINDOW_FILL),
        )
        if shape is not None
    ]
    layout = {
        "margin": {"l": 55, "r": 10, "t": 10, "b": 45},
        "height": 230,
        # Hours and minutes for a walk's usual 1.5 hours (the page gives the dates above);
        # a walk over days names the day on its ticks.
        "xaxis": {
            "type": "date",
            "title": {"text": "time (UTC)"},
            "tickformatstops": [
                {"dtickrange": [None, TWO_HOURS_MS], "value": "%H:%M"},
                {"dtickrange": [TWO_HOURS_MS, DAY_MS], "value": "%d %b %H:%M"},
                {"dtickrange": [DAY_MS, None], "value": "%d %b"},
            ],
        },
        "yaxis": {"title": {"text": unit}, "rangemode": "tozero", "exponentformat": "SI"},
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "shapes": shapes,
    }
    return {"data": data, "layout": layout}


def walk_charts(walk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The page's charts: id, title, source, and the figure of each frozen chart."""
    return [
        {
            "id": f"chart-{chart.get('name')}",
            "name": str(chart.get("name", "")),
            "unit": str(chart.get("unit", "")),
            "source": str(chart.get("source", "")),
            "figure": chart_figure(chart, walk),
        }
        for chart in walk.get("charts") or ()
    ]


def figures_by_id(charts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """What the page embeds as JSON for its script: chart id -> figure."""
    return {c["id"]: c["figure"] for c in charts}
