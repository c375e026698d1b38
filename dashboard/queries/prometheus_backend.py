"""Running a planned spec against Prometheus: compile, one range query, typed result.

This runs on worker threads (see `run_queries`): it touches no database, only
the plan and the HTTP client in `inventory.prometheus`.
"""

from __future__ import annotations

from typing import Any

from dashboard.queries.plan import Plan
from dashboard.queries.promql import compile_plan
from dashboard.queries.result import QueryResult, ResultSeries, failed, unavailable
from inventory.prometheus import PrometheusError, prometheus_query_range

# More series than a panel can show is a cardinality accident; cap it client-side (D26).
MAX_SERIES = 500


def _points(values: list[Any]) -> dict[int, float]:
    """Prometheus' [[t, "v"], ...] keyed by millisecond, values parsed ("NaN", "+Inf" too)."""
    points = {}
    for stamp, text in values:
        try:
            points[round(float(stamp) * 1000)] = float(text)
        except (TypeError, ValueError):
            continue
    return points


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
    series = []
    for row in rows:
        points = _points(row.get("values") or [])
        values = tuple(points.get(round(t * 1000)) for t in grid)
        result = ResultSeries(dict(row.get("metric", {})), grid, values)
        if result.present:
            series.append(result)
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
