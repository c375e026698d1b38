"""Plotly figure JSON for a panel, built as plain dicts (plotly's Python validation is slow
and adds nothing here: the browser's plotly.js is the renderer).

`panel_figure` is the one entry point: a panel's `kind` picks lines, a stacked area, a
heatmap or a step line of codes. Every builder keeps gaps as null and never puts a bare NaN
in the JSON. Hover text rounds to 4 significant figures and names the unit; the data itself
stays exact. A quantile from buckets says in its hover which bucket it was interpolated in
(dashboard.precision), and a latency quantile panel whose values span more than two decades
opens on a log axis, with a linear/log toggle on the page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal, get_args

import numpy as np

from dashboard.heatmaps import bucket_rates
from dashboard.precision import spans_decades
from queries import QueryResult, ResultSeries

PanelKind = Literal["line", "stacked", "heatmap", "codes"]
PANEL_KINDS: frozenset[str] = frozenset(get_args(PanelKind))

# plotly.js' default colourway; stacked runs set colours themselves so that a layer
# split into several gap-separated runs keeps one colour.
COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


def plotly_text(text: str) -> str:
    """`text` shown as is by plotly.js, which reads a subset of HTML in trace names (an
    `<a href>` in a label value would become a link in the legend); it decodes these
    entities back for display."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _label(trace: str, labels: Mapping[str, str]) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
    if not shown:
        return plotly_text(trace)
    return plotly_text(shown if trace.startswith("by ") else f"{trace} ({shown})")


def _y(series: ResultSeries) -> list[float | None]:
    # Gaps stay gaps: a ResultSeries already holds finite floats or None (both of its
    # constructors turn NaN and infinities into None), so a copy is the cleaned column.
    return list(series.values)


def _lower_bounds_only(series: ResultSeries) -> list[float | None] | None:
    """The lower bound at each step where a quantile is only known to exceed an edge, or
    None when there is no such step."""
    if series.lower is None or series.upper is None:
        return None
    above = [
        low if value is None and low is not None and high is None else None
        for value, low, high in zip(series.values, series.lower, series.upper, strict=True)
    ]
    return above if any(v is not None for v in above) else None


# d3-format: 4 significant figures in plain decimals with thousands separators, trailing
# zeros trimmed (196.9176 -> "196.9", 79123.4 -> "79,120", 0.012345 -> "0.01235"). Not SI
# ("500m ratio" reads wrong) and not exponent notation (what "g" does from 10,000 up).
HOVER_FORMAT = ",.4~r"


def hover_template(unit: str, *, value_format: str = HOVER_FORMAT) -> str:
    """Hover text for one point: the UTC time, and the value rounded with its unit (the
    trace's name is shown beside it, as plotly does by default)."""
    return f"%{{x|%Y-%m-%d %H:%M:%S}} UTC<br>%{{y:{value_format}}} {plotly_text(unit)}"


# Units the hover abbreviates where it repeats them ("(160 s, 640 s]"), so the text fits.
SHORT_UNITS = {"seconds": "s"}


def quantile_hover_template(unit: str) -> str:
    """Hover text for a quantile from buckets: the interpolated value and the bucket it lies
    in, from the point's customdata [lower, upper] ("635.2 s, interpolated within
    (160 s, 640 s]"): the value is a guess inside that bucket, not a measurement."""
    shown = plotly_text(SHORT_UNITS.get(unit, unit))
    return (
        f"%{{x|%Y-%m-%d %H:%M:%S}} UTC<br>%{{y:{HOVER_FORMAT}}} {shown}, interpolated within "
        f"(%{{customdata[0]:{HOVER_FORMAT}}} {shown}, %{{customdata[1]:{HOVER_FORMAT}}} {shown}]"
    )


def lower_bound_hover_template(unit: str) -> str:
    """Hover text for a quantile past the last finite bucket edge: a bound, not a value."""
    shown = plotly_text(SHORT_UNITS.get(unit, unit))
    return (
        f"%{{x|%Y-%m-%d %H:%M:%S}} UTC<br>&gt; %{{y:{HOVER_FORMAT}}} {shown} "
        "(past the last bucket edge)"
    )


def _buckets(series: ResultSeries) -> list[list[float | None]] | None:
    """Each point's bucket [lower, upper] as plotly customdata, or None for a series that is
    not a quantile from buckets."""
    if series.lower is None or series.upper is None:
        return None
    return [[low, high] for low, high in zip(series.lower, series.upper, strict=True)]


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TWO_HOURS_MS = 2 * 3600 * 1000
DAY_MS = 24 * 3600 * 1000


@lru_cache(maxsize=32)
def _grid_utc(timestamps: tuple[float, ...]) -> tuple[str, ...]:
    # Every series of a window shares its step grid, so it is converted once per grid,
    # not once per trace. Whole milliseconds first (np.rint rounds half to even as
    # round() does), then the exact wall-clock text of that millisecond.
    millis = np.rint(np.asarray(timestamps, dtype=float) * 1000).astype(np.int64).tolist()
    return tuple(
        (EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] for ms in millis
    )


def utc_times(timestamps: Sequence[float]) -> list[str]:
    """Unix seconds as UTC wall-clock text ("2026-12-01 10:15:00.000") for a date axis.
    plotly.js shows date strings as written but puts epoch milliseconds in the browser's
    time zone, so a chart read in Los Angeles would disagree with "all times UTC". A list
    per trace, so no two traces share one that a caller might change."""
    return list(_grid_utc(tuple(timestamps)))


def threshold_line(value: float, name: str, colour: str, *, width: float) -> dict[str, Any]:
    """A dashed horizontal line across the whole chart at `value` (an SLO threshold or
    target)."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": value,
        "y1": value,
        "line": {"dash": "dash", "width": width, "color": colour},
        "name": name,
    }


def _layout(unit: str) -> dict[str, Any]:
    return {
        "margin": {"l": 50, "r": 10, "t": 10, "b": 30},
        "height": 220,
        # Hours and minutes while ticks are under two hours apart (the window note above
        # the charts carries the date); wider ticks (24 h, 3 d views) name the day too, so
        # a 3-day axis never reads "00:00 00:00 00:00".
        "xaxis": {
            "type": "date",
            "tickformatstops": [
                {"dtickrange": [None, TWO_HOURS_MS], "value": "%H:%M"},
                # plotly takes the first stop whose range holds the tick spacing, ends
                # included: a whole day's spacing must fall in the next stop.
                {"dtickrange": [TWO_HOURS_MS, DAY_MS - 1], "value": "%d %b %H:%M"},
                {"dtickrange": [DAY_MS, None], "value": "%d %b"},
            ],
            "title": {"text": ""},
        },
        # SI suffixes: plotly's default "B" for billions reads as bytes on a bytes axis.
        "yaxis": {
            "title": {"text": unit},
            "rangemode": "tozero",
            "exponentformat": "SI",
            "hoverformat": HOVER_FORMAT,
        },
        "legend": {"orientation": "h", "y": -0.25},
    }


@dataclass(frozen=True)
class Drawn:
    """A panel's figure, what drawing it found (shown with the panel's notes, as text),
    and whether it had to leave out data it could not trust."""

    figure: dict[str, Any]
    notes: tuple[str, ...] = ()
    incomplete: bool = False


# The y scales a latency quantile panel offers (the figure's "y_scales"): the page shows a
# toggle between them; the layout's yaxis.type is the one it opens on.
Y_SCALES = ("linear", "log")
LATENCY_UNIT = "seconds"


def is_quantile_panel(results: Mapping[str, QueryResult], *, unit: str) -> bool:
    """A latency panel with quantiles from buckets: unit seconds and at least one series
    that carries its buckets (lower/upper)."""
    return unit == LATENCY_UNIT and any(
        series.lower is not None and series.upper is not None
        for result in results.values()
        for series in result.series
    )


def log_scale_by_default(results: Mapping[str, QueryResult], *, unit: str) -> bool:
    """Whether a panel opens on a log y axis: a latency quantile panel whose finite values
    (lower bounds past the last edge included) span more than two decades."""
    if not is_quantile_panel(results, unit=unit):
        return False
    values: list[float | None] = []
    for result in results.values():
        for series in result.series:
            values.extend(series.values)
            values.extend(_lower_bounds_only(series) or ())
    return spans_decades(values)


def offer_log_scale(
    figure: dict[str, Any], results: Mapping[str, QueryResult], *, unit: str
) -> dict[str, Any]:
    """Mark a latency quantile panel's figure as offering linear and log y axes, opening on
    log when its values span more than two decades. Other figures are returned as they are."""
    if not is_quantile_panel(results, unit=unit):
        return figure
    figure["y_scales"] = list(Y_SCALES)
    if log_scale_by_default(results, unit=unit):
        figure["layout"]["yaxis"]["type"] = "log"
    return figure


def panel_figure(kind: PanelKind, results: Mapping[str, QueryResult], *, unit: str) -> Drawn:
    """The figure for a panel of `kind` from its usable query results."""
    if kind == "line":
        return Drawn(offer_log_scale(line_figure(results, unit=unit), results, unit=unit))
    if kind == "stacked":
        return Drawn(stacked_figure(results, unit=unit))
    if kind == "heatmap":
        return heatmap_figure(results, unit=unit)
    if kind == "codes":
        return Drawn(codes_figure(results, unit=unit))
    raise ValueError(f"unknown panel kind {kind!r}; choose from {sorted(PANEL_KINDS)}")


def line_figure(
    results: Mapping[str, QueryResult], *, unit: str, thresholds: Mapping[str, float] | None = None
) -> dict[str, Any]:
    data: list[dict[str, Any]] = []
    for trace, result in results.items():
        for series in result.series:
            line: dict[str, Any] = {
                "type": "scatter",
                "mode": "lines",
                "name": _label(trace, series.labels),
                "x": utc_times(series.timestamps),
                "y": _y(series),
                "connectgaps": False,
                "hovertemplate": hover_template(unit),
            }
            buckets = _buckets(series)
            if buckets is not None:
                line["customdata"] = buckets
                line["hovertemplate"] = quantile_hover_template(unit)
            data.append(line)
            above = _lower_bounds_only(series)
            if above is not None:
                # A quantile past the last finite bucket edge has no value, only a bound:
                # drawn as markers at the edge it exceeds, never as a line of values.
                data.append(
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "marker": {"symbol": "triangle-up", "size": 7},
                        "name": f"{_label(trace, series.labels)}: above (lower bound)",
                        "x": utc_times(series.timestamps),
                        "y": above,
                        "hovertemplate": lower_bound_hover_template(unit),
                    }
                )
    shapes = [
        threshold_line(value, name, "#c62828", width=1.0)
        for name, value in (thresholds or {}).items()
    ]
    return {"data": data, "layout": _layout(unit) | {"shapes": shapes}}


def _complete_runs(complete: Sequence[bool]) -> list[tuple[int, int]]:
    """[start, stop) index ranges where `complete` is True throughout."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, ok in enumerate([*complete, False]):
        if ok and start is None:
            start = i
        elif not ok and start is not None:
            runs.append((start, i))
            start = None
    return runs


def stacked_figure(results: Mapping[str, QueryResult], *, unit: str) -> dict[str, Any]:
    """Layers stacked bottom-up in trace order (then series order), e.g. queue, prefill, decode.

    plotly's stackgroup has no gap mode: it would draw a missing value as 0 or interpolate
    it. So a step where any layer is missing is a gap in the whole stack (its top is
    unknown), and each run of complete steps is its own stack group.
    """
    layers = [
        (_label(trace, series.labels), series)
        for trace, result in results.items()
        for series in result.series
    ]
    grids = {series.timestamps for _, series in layers}
    if len(grids) != 1:
        return line_figure(results, unit=unit)
    x = utc_times(grids.pop())
    gaps = np.isnan(np.vstack([series.floats for _, series in layers])).any(axis=0)
    runs = _complete_runs((~gaps).tolist())
    if not runs:
        # No step where the stack is whole: show what there is as lines, gaps and all.
        return line_figure(results, unit=unit)
    data: list[dict[str, Any]] = []
    for run, (start, stop) in enumerate(runs):
        for layer, (name, series) in enumerate(layers):
            colour = COLOURS[layer % len(COLOURS)]
            data.append(
                {
                    "type": "scatter",
                    # A one-step run has no area to fill: a marker keeps it visible.
                    "mode": "lines" if stop - start > 1 else "lines+markers",
                    "name": name,
                    "x": x[start:stop],
                    "y": list(series.values[start:stop]),
                    "stackgroup": f"run{run}",
                    "legendgroup": name,
                    "showlegend": run == 0,
                    "line": {"width": 1, "color": colour},
                    "marker": {"color": colour, "size": 4},
                    # The layer's own value, not the stack's top.
                    "hovertemplate": hover_template(unit),
                }
            )
    layout = _layout(unit)
    # The whole window, as on the line panels, even where the stack has no complete step.
    layout["xaxis"]["range"] = [x[0], x[-1]]
    return {"data": data, "layout": layout}


def codes_figure(results: Mapping[str, QueryResult], *, unit: str) -> dict[str, Any]:
    """Codes (an XID, say), not amounts: each value holds until the next sample (steps), a
    marker shows where a code starts (so a code seen once, between gaps, is visible too),
    and the y axis has integer ticks at the codes seen only, so there is no "0.5" between
    codes and no tick for a code nobody reported.

    The markers are one trace for the whole panel, not a marker per sample per GPU: with
    56 GPUs an hour at 15 s is 13,496 markers, which took a third of a second to draw."""
    figure = line_figure(results, unit=unit)
    codes: set[float] = set()
    starts: dict[str, list[Any]] = {"x": [], "y": [], "text": []}
    for trace in figure["data"]:
        trace["line"] = {"shape": "hv"}
        trace["hovertemplate"] = hover_template(unit, value_format="d")
        codes.update(v for v in trace["y"] if v is not None)
        previous = None
        for at, value in zip(trace["x"], trace["y"], strict=True):
            if value is not None and value != previous:
                starts["x"].append(at)
                starts["y"].append(value)
                starts["text"].append(trace["name"])
            previous = value
    if starts["x"]:
        # Markers pad plotly's autorange: keep the lines' span, as on the line panels
        # (UTC wall-clock text sorts as time).
        spans = [trace["x"] for trace in figure["data"] if trace["x"]]
        figure["layout"]["xaxis"]["range"] = [min(x[0] for x in spans), max(x[-1] for x in spans)]
        figure["data"].append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{plotly_text(unit)} starts",
                "marker": {"size": 6, "color": "#444", "symbol": "diamond"},
                **starts,
                "hovertemplate": f"%{{text}}<br>{hover_template(unit, value_format='d')}"
                "<extra>from here</extra>",
            }
        )
    ticks = sorted(codes | {0.0})
    figure["layout"]["yaxis"] |= {
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [f"{v:g}" for v in ticks],
        "tickformat": "d",
        "hoverformat": "d",
        # Room above the highest code, and 0 at the bottom even when it is the only code.
        "range": [-0.5, max(ticks) + 0.5],
    }
    return figure


def heatmap_figure(
    results: Mapping[str, QueryResult], *, unit: str, rate_unit: str = "observations/s"
) -> Drawn:
    """One heatmap per trace: x time, y bucket upper edges (categories), z rate per bucket.

    `unit` is the histogram's (what the edges measure); `rate_unit` is the colour scale's.
    """
    data: list[dict[str, Any]] = []
    notes: list[str] = []
    blanked = 0
    for trace, result in results.items():
        buckets = bucket_rates(result.series)
        notes.extend(buckets.notes)
        blanked += buckets.blanked_steps
        if not buckets.edges:
            continue
        data.append(
            {
                "type": "heatmap",
                "name": trace,
                "x": utc_times(result.series[0].timestamps),
                "y": buckets.labels,
                "z": [list(row) for row in buckets.rows],
                "hoverongaps": False,
                "colorscale": "Viridis",
                "colorbar": {"title": {"text": rate_unit, "side": "right"}, "thickness": 10},
                "hovertemplate": f"%{{y}} {unit}: %{{z:.3g}} {rate_unit}<extra></extra>",
            }
        )
    layout = _layout(unit)
    # Categories in the order given (numeric), never plotly's own sorting of the labels.
    layout["yaxis"] = {
        "title": {"text": unit},
        "type": "category",
        "automargin": True,  # room for long edge labels such as "≤0.001"
        "categoryorder": "array",
        "categoryarray": data[0]["y"] if data else [],
    }
    return Drawn({"data": data, "layout": layout}, tuple(notes), incomplete=blanked > 0)
