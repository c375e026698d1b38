"""Running a planned spec against Prometheus: compile, one range query, typed result.

This runs on worker threads (see `run_queries`): it touches no database, only
the plan and the HTTP client in `inventory.prometheus`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from inventory.prometheus import PrometheusError, prometheus_query_range
from queries.plan import Plan
from queries.promql.compile import compile_plan
from queries.result import QueryResult, ResultSeries, failed, unavailable

# More series than a panel can show is a cardinality accident; cap it client-side (D26).
MAX_SERIES = 500


def points_by_ms(values: list[Any]) -> dict[int, float]:
    """Prometheus' [[t, "v"], ...] keyed by millisecond, values parsed ("NaN", "+Inf" too)."""
    points = {}
    for stamp, text in values:
        try:
            points[round(float(stamp) * 1000)] = float(text)
        except (TypeError, ValueError):
            continue
    return points


def on_grid(values: list[Any], grid_ms: np.ndarray) -> np.ndarray:
    """Prometheus' [[t, "v"], ...] spread over `grid_ms` (NaN where there is no point), in
    numpy: a range answer is mostly this conversion, done for every series of every panel.
    A malformed pair sends the row through `points_by_ms`, which skips just that pair."""
    out = np.full(len(grid_ms), np.nan)
    if not values:
        return out
    try:
        pairs = np.array(values, dtype=object)
        stamps = np.rint(pairs[:, 0].astype(np.float64) * 1000).astype(np.int64)
        parsed = pairs[:, 1].astype(np.float64)
    except (TypeError, ValueError, IndexError):
        points = points_by_ms(values)
        return np.array([points.get(int(t), np.nan) for t in grid_ms], dtype=np.float64)
    where = np.searchsorted(grid_ms, stamps)
    inside = where < len(grid_ms)
    hits = inside.copy()
    hits[inside] = grid_ms[where[inside]] == stamps[inside]
    out[where[hits]] = parsed[hits]
    return out


def run_prometheus(plan: Plan, *, base_url: str, timeout_seconds: float) -> QueryResult:
    compiled = compile_plan(plan)
    window = plan.window
    try:
        answer = prometheus_query_range(
            base_url,
            query=compiled.promql,
            start=window.start,
            end=window.end,
            step_seconds=window.step_seconds,
            timeout_seconds=timeout_seconds,
        )
    except PrometheusError as exc:
        return failed(exc.reason, str(exc), plan.resolved_name)
    warnings = [*plan.warnings, *compiled.warnings]
    grid = tuple(window.timestamps())
    rows = sorted(answer.result, key=lambda row: sorted(row.get("metric", {}).items()))
    if len(rows) > MAX_SERIES:
        warnings.append(f"showing the first {MAX_SERIES} of {len(rows)} series")
        rows = rows[:MAX_SERIES]
    grid_ms = np.array([round(t * 1000) for t in grid], dtype=np.int64)
    series = []
    for row in rows:
        values = on_grid(row.get("values") or [], grid_ms)
        if np.isfinite(values).any():
            series.append(ResultSeries.from_array(dict(row.get("metric", {})), grid, values))
    if not series:
        return unavailable(
            "no-data", f"no samples of {plan.resolved_name} in this window", plan.resolved_name
        )
    partial = bool(answer.warnings) or len(answer.result) > MAX_SERIES
    warnings.extend(f"prometheus: {w}" for w in answer.warnings)
    return QueryResult(
        "partial" if partial else "ok",
        tuple(series),
        "",
        plan.resolved_name,
        plan.message,
        tuple(dict.fromkeys(warnings)),
    )
