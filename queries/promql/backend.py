"""Prometheus' answers to compiled plans: `fetch` sends one range query (on a worker
thread of `run_queries`: no database, only the HTTP client in `inventory.prometheus`),
`result_from` turns an answer into a plan's typed result, and `failed_scrapes` reads
`up` for the page's `partial` status."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetscope.lib.lru import LruCache
from inventory.prometheus import (
    PrometheusAnswer,
    PrometheusBadAnswer,
    PrometheusError,
    prometheus_query,
    prometheus_query_range,
)
from queries.plan import Plan
from queries.promql.compile import Compiled
from queries.promql.grid import matrix_on_grid
from queries.promql.text import any_of_regex, duration, matcher, selector
from queries.quantiles import LabelSet, dropped_edges_warning, quantiles_from_buckets
from queries.result import QueryResult, ResultSeries, failed, unavailable
from queries.spec import Quantile, Window

# More series than a panel can show is a cardinality accident; cap it client-side (D26).
MAX_SERIES = 500
# A quantile's answer is its bucket rates (edges x groups); cutting it would corrupt them.
MAX_BUCKET_SERIES = 500 * 64


@dataclass(frozen=True)
class Fetched:
    """One range query's answer, or how it failed: shared by every plan compiled to it."""

    answer: PrometheusAnswer | None
    error: PrometheusError | None = None


def fetch(promql: str, window: Window, *, base_url: str, timeout_seconds: float) -> Fetched:
    try:
        answer = prometheus_query_range(
            base_url,
            query=promql,
            start=window.start,
            end=window.end,
            step_seconds=window.step_seconds,
            timeout_seconds=timeout_seconds,
        )
    except PrometheusError as exc:
        return Fetched(None, exc)
    return Fetched(answer)


def result_from(plan: Plan, compiled: Compiled, fetched: Fetched) -> QueryResult:
    """The typed result of `plan` from the answer to its compiled PromQL."""
    if fetched.answer is None:
        assert fetched.error is not None
        return failed(fetched.error.reason, str(fetched.error), plan.resolved_name)
    try:
        return _result_of(plan, compiled, fetched.answer)
    except PrometheusBadAnswer as exc:  # the pairs, checked as numpy reads them
        return failed(exc.reason, str(exc), plan.resolved_name)


def _result_of(plan: Plan, compiled: Compiled, answer: PrometheusAnswer) -> QueryResult:
    window = plan.window
    warnings = [*plan.warnings, *compiled.warnings]
    grid = tuple(window.timestamps())
    grid_ms = np.array([round(t * 1000) for t in grid], dtype=np.int64)
    rows = sorted(answer.result, key=lambda row: sorted(row.get("metric", {}).items()))
    limit = MAX_SERIES if compiled.quantile is None else MAX_BUCKET_SERIES
    if len(rows) > limit:
        warnings.append(f"showing the first {limit} of {len(rows)} series")
        rows = rows[:limit]
    if compiled.quantile is not None:
        per_le = _bucket_rates(answer.result, rows, grid_ms)
        series = _quantile_series(plan, compiled.quantile, per_le, grid, warnings)
    else:
        matrix = matrix_on_grid(rows, grid_ms)
        shown = np.isfinite(matrix).any(axis=1).tolist()
        series = [
            ResultSeries.from_array(dict(row.get("metric", {})), grid, matrix[i])
            for i, row in enumerate(rows)
            if shown[i]
        ]
    if not series:
        return unavailable(
            "no-data", f"no samples of {plan.resolved_name} in this window", plan.resolved_name
        )
    partial = bool(answer.warnings) or len(answer.result) > limit
    warnings.extend(f"prometheus: {w}" for w in answer.warnings)
    return QueryResult(
        "partial" if partial else "ok",
        tuple(series),
        "",
        plan.resolved_name,
        plan.message,
        tuple(dict.fromkeys(warnings)),
    )


# Bucket rates of recent answers on their grid: p50, p90 and p99 of one histogram are
# three plans sharing one answer (one query), converted once. Keyed by the identity of the
# answer's rows; the entry holds them, so that id cannot be reused while it lives.
_BUCKET_RATES: LruCache[tuple[int, bytes, int], tuple[list[Any], dict[LabelSet, np.ndarray]]] = (
    LruCache(64)
)


def _bucket_rates(
    answered: list[Any], rows: list[dict[str, Any]], grid_ms: np.ndarray
) -> dict[LabelSet, np.ndarray]:
    """`rows` (sorted and capped from `answered`, an answer's result) keyed by their sorted
    labels, on the grid, in one numpy pass per answer."""

    def convert() -> tuple[list[Any], dict[LabelSet, np.ndarray]]:
        matrix = matrix_on_grid(rows, grid_ms)
        labels = (tuple(sorted(dict(row.get("metric", {})).items())) for row in rows)
        return answered, {key: matrix[i] for i, key in enumerate(labels)}

    kept = _BUCKET_RATES.get_or_make((id(answered), grid_ms.tobytes(), len(rows)), convert)
    return kept[1] if kept[0] is answered else convert()[1]


def _quantile_series(
    plan: Plan,
    q: float,
    per_le: dict[LabelSet, np.ndarray],
    grid: tuple[float, ...],
    warnings: list[str],
) -> list[ResultSeries]:
    spec = plan.spec
    assert isinstance(spec, Quantile)
    resolved = plan.keys[spec.key]
    found = quantiles_from_buckets(q, per_le, spec.by, resolved)
    warning = dropped_edges_warning(resolved.name, found.dropped)
    if warning is not None:
        warnings.append(warning)
    return [
        ResultSeries.from_array(dict(key), grid, values, bounds=found.bounds[key])
        for key, values in sorted(found.values.items())
        if np.isfinite(values).any() or np.isfinite(found.bounds[key][0]).any()
    ]


def failed_scrapes(
    instances: Sequence[str], window: Window, reach_seconds: float, *, base_url: str,
    timeout_seconds: float,
) -> dict[str, int]:  # fmt: skip
    """Failed scrapes per instance from Prometheus' own `up` over the window and `reach`
    before it (what the local backend counts from the store's failed scrapes), so a page
    says `partial` for the same reason whichever backend drew it. Empty when Prometheus
    cannot say: the panels' own queries report that failure. Raises PrometheusBadAnswer
    when Prometheus answered in the wrong shape, which the panels' queries cannot show."""
    if not instances:
        return {}
    span = (window.end - window.start).total_seconds() + reach_seconds
    selector_text = selector("up", [matcher("instance", "=~", any_of_regex(sorted(instances)))])
    promql = (
        f"count_over_time({selector_text}[{duration(span)}])"
        f" - sum_over_time({selector_text}[{duration(span)}])"
    )
    try:
        answer = prometheus_query(
            base_url, query=promql, at=window.end, timeout_seconds=timeout_seconds
        )
    except PrometheusBadAnswer:
        raise
    except PrometheusError:
        return {}
    if answer.result_type != "vector":
        raise PrometheusBadAnswer(f"`up` answered a {answer.result_type}, not a vector")
    found: dict[str, int] = {}
    for row in answer.result:  # rows, labels and pairs checked by the client
        instance = row["metric"].get("instance", "")
        try:
            count = float(row["value"][1])
        except ValueError:
            raise PrometheusBadAnswer("an `up` count is not a number") from None
        if math.isinf(count):
            raise PrometheusBadAnswer("an `up` count is infinite")
        if instance and count >= 1:
            found[instance] = max(found.get(instance, 0), int(count))
    return found
