"""The incident page's charts are drawn from the walk as it was frozen: a line per
replica, gaps kept, the baseline and the window shaded, times as UTC text."""

from __future__ import annotations

from typing import Any

from triage.figures import chart_figure, figures_by_id, walk_charts

HOSTILE = "<img src=x onerror=alert(1)>:8000"


def a_stored_walk() -> dict[str, Any]:
    return {
        "window": {"start": "2026-11-18T11:05:00Z", "end": "2026-11-18T11:10:00Z"},
        "baseline": {"start": "2026-11-18T10:05:00Z", "end": "2026-11-18T11:05:00Z"},
        "charts": [
            {
                "name": "kv_usage",
                "unit": "ratio",
                "source": "KV cache usage (gauge) (vllm:kv_cache_usage_perc)",
                "t": [1_795_000_000.0, 1_795_000_030.0, 1_795_000_060.0],
                "series": [
                    {"replica": "10.0.0.1:8000", "v": [0.5, None, 0.97]},
                    {"replica": HOSTILE, "v": [0.4, 0.41, 0.42]},
                ],
            }
        ],
    }


def test_each_replica_is_a_line_with_its_gaps_kept_and_utc_times() -> None:
    walk = a_stored_walk()
    figure = chart_figure(walk["charts"][0], walk)
    first, second = figure["data"]
    assert first["name"] == "10.0.0.1:8000" and first["y"] == [0.5, None, 0.97]
    assert first["connectgaps"] is False
    assert first["x"][0] == "2026-11-18 11:06:40.000"  # UTC wall clock, not epoch millis
    assert "UTC" in first["hovertemplate"] and "ratio" in first["hovertemplate"]
    # A label value is text in the legend, never markup plotly.js would render.
    assert second["name"] == "&lt;img src=x onerror=alert(1)&gt;:8000"
    assert figure["layout"]["xaxis"]["title"]["text"] == "time (UTC)"


def test_the_baseline_and_the_window_are_shaded_where_they_fell() -> None:
    walk = a_stored_walk()
    baseline, window = chart_figure(walk["charts"][0], walk)["layout"]["shapes"]
    assert (baseline["x0"], baseline["x1"]) == (
        "2026-11-18 10:05:00.000",
        "2026-11-18 11:05:00.000",
    )
    assert (window["x0"], window["x1"]) == ("2026-11-18 11:05:00.000", "2026-11-18 11:10:00.000")
    assert window["fillcolor"] != baseline["fillcolor"]


def test_a_walk_frozen_before_charts_existed_draws_none() -> None:
    walk = a_stored_walk()
    del walk["charts"]
    assert walk_charts(walk) == [] and figures_by_id([]) == {}


def test_the_page_gets_one_figure_per_chart_by_id() -> None:
    charts = walk_charts(a_stored_walk())
    assert [c["id"] for c in charts] == ["chart-kv_usage"]
    assert set(figures_by_id(charts)) == {"chart-kv_usage"}
    assert charts[0]["source"].endswith("(vllm:kv_cache_usage_perc)")
