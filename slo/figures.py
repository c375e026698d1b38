"""Plotly figure JSON for an SLO's page, as plain dicts (see dashboard.figures).

An interval is drawn as a band between its lower and upper bounds, an exact figure as
a line (the band's two edges coincide). Gaps stay gaps (null), never zero. Times are
UTC wall-clock strings without a zone (`dashboard.figures.utc_times`): plotly.js shows
those as written, while it would shift epoch milliseconds into the browser's time zone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.figures import line_figure, plotly_text, threshold_line, utc_times
from queries import QueryResult
from slo.evaluation.figures import HourlyAttainment, ObjectiveStatus

BAND_COLOUR = "#1f77b4"
BAND_FILL = "rgba(31, 119, 180, 0.25)"
TARGET_COLOUR = "#c62828"
ZERO_COLOUR = "#5d6673"
TIME_AXIS = {"type": "date", "title": {"text": "time (UTC)"}, "tickformat": "%d %b %H:%M"}


def _scaled(values: Sequence[float | None], factor: float) -> list[float | None]:
    return [None if v is None else v * factor for v in values]


def _layout(unit: str) -> dict[str, Any]:
    return {
        "margin": {"l": 55, "r": 10, "t": 30, "b": 40},
        "height": 260,
        "xaxis": dict(TIME_AXIS),
        "yaxis": {"title": {"text": unit}, "exponentformat": "SI"},
        # Above the plot: below it the legend would cover the time axis' title.
        "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        "hovermode": "x unified",
    }


def _hline(value: float, name: str, colour: str) -> dict[str, Any]:
    return threshold_line(value, name, colour, width=1.5)


def _band(
    x: list[str], lower: list[float | None], upper: list[float | None], name: str
) -> list[dict[str, Any]]:
    """Two traces: the lower edge, then the upper edge filled down to it. Where both
    edges agree the band is a line: the figure is exact there."""
    exact = all(lo == hi for lo, hi in zip(lower, upper, strict=True))
    edge = {"type": "scatter", "mode": "lines", "x": x, "connectgaps": False}
    if exact:
        return [edge | {"y": lower, "name": name, "line": {"color": BAND_COLOUR, "width": 2}}]
    return [
        edge
        | {
            "y": lower,
            "name": f"{name}: lower bound",
            "line": {"color": BAND_COLOUR, "width": 1},
            "legendgroup": name,
        },
        edge
        | {
            "y": upper,
            "name": f"{name}: upper bound",
            "line": {"color": BAND_COLOUR, "width": 1},
            "fill": "tonexty",
            "fillcolor": BAND_FILL,
            "legendgroup": name,
        },
    ]


def attainment_figure(objective: ObjectiveStatus) -> dict[str, Any] | None:
    """Attainment after each hour (percent), as a band when inexact, with the target."""
    hourly = objective.hourly
    if hourly is None or not hourly.timestamps:
        return None
    x = utc_times(hourly.timestamps)
    data = _band(x, _scaled(hourly.lower, 100), _scaled(hourly.upper, 100), "attainment")
    layout = _layout("% of " + objective.events_name)
    target = objective.target * 100
    layout["shapes"] = [_hline(target, "target", TARGET_COLOUR)]
    layout["annotations"] = [_label(target, f"target {target:.4g}%", TARGET_COLOUR)]
    return {"data": data, "layout": layout}


def _label(y: float, text: str, colour: str) -> dict[str, Any]:
    return {
        "xref": "paper",
        "x": 0,
        "xanchor": "left",
        "y": y,
        "yanchor": "bottom",
        "text": plotly_text(text),
        "showarrow": False,
        "font": {"color": colour, "size": 11},
    }


def budget_figure(hourly: HourlyAttainment | None) -> dict[str, Any] | None:
    """Error budget remaining after each hour (percent of the window's budget)."""
    if hourly is None or not hourly.budget_lower or not hourly.timestamps:
        return None
    x = utc_times(hourly.timestamps)
    upper = hourly.budget_upper or hourly.budget_lower
    data = _band(x, _scaled(hourly.budget_lower, 100), _scaled(upper, 100), "budget remaining")
    layout = _layout("% of budget left")
    layout["shapes"] = [_hline(0, "exhausted", ZERO_COLOUR)]
    layout["annotations"] = [_label(0, "exhausted below 0%", ZERO_COLOUR)]
    return {"data": data, "layout": layout}


def latency_figure(
    result: QueryResult | None, *, threshold: float, quantile_name: str
) -> dict[str, Any] | None:
    """The quantile over time with the bucket bounds it lies between, and the threshold."""
    if result is None or not result.has_data:
        return None
    figure = line_figure(
        {quantile_name: result}, unit="seconds", thresholds={"threshold": threshold}
    )
    bands: list[dict[str, Any]] = []
    for series in result.series:
        if series.lower is None or series.upper is None:
            continue
        x = utc_times(series.timestamps)
        bands.extend(
            _band(x, list(series.lower), list(series.upper), "bucket holding the quantile")
        )
    for trace in bands:
        trace["line"] = {"color": "rgba(127, 127, 127, 0.6)", "width": 0.5}
        trace["showlegend"] = "fill" in trace or len(bands) == 1
        if "fill" in trace:
            trace["fillcolor"] = "rgba(127, 127, 127, 0.15)"
            trace["name"] = "bucket holding the quantile"
    figure["data"] = bands + figure["data"]
    layout = figure["layout"]
    layout.update(_layout("seconds"))
    layout["yaxis"]["rangemode"] = "tozero"
    layout["annotations"] = [_label(threshold, f"threshold {threshold:g} s", TARGET_COLOUR)]
    return figure
