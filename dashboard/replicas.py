"""The per-replica table: each vLLM replica's key figures against the fleet median.

On-call question: "is one replica sick, or the whole fleet?" Every figure is
taken over the last `TABLE_WINDOW_SECONDS` at the end of the viewed window,
per `instance` (data-parallel engines behind one server add up: queues and
rates are summed, KV usage is the fullest engine). A replica that stopped
answering is shown as down with the scraper's reason, never as zeros, and is
left out of the median.

Outliers: with at least `MIN_REPLICAS_FOR_MEDIAN` replicas reporting a figure,
a value is flagged when it is `factor` times worse than the fleet median *and*
differs from it by at least `floor` (so 0.02 against a median of 0.01 is not
an incident). "Worse" is higher for latency, queues, KV and preemptions and
lower for throughput (a starved or wedged replica).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from inventory.models import EndpointKind, Fleet, ScrapeStatus
from inventory.selectors import endpoints_with_health
from queries import (
    Backend,
    Gauge,
    Quantile,
    QueryResult,
    Rate,
    Scope,
    Spec,
    Window,
    run_queries,
)

TABLE_WINDOW_SECONDS = 300.0
MIN_REPLICAS_FOR_MEDIAN = 3


@dataclass(frozen=True)
class Column:
    id: str
    title: str
    unit: str
    spec: Spec
    worse: Literal["high", "low"]
    factor: float
    floor: float


def _rate(key: str) -> Rate:
    return Rate(key, by=("instance",), window_seconds=TABLE_WINDOW_SECONDS)


def _gauge(key: str, agg: Literal["sum", "max"]) -> Gauge:
    return Gauge(key, agg=agg, by=("instance",))


def _p99(key: str) -> Quantile:
    return Quantile(key, 0.99, by=("instance",), window_seconds=TABLE_WINDOW_SECONDS)


COLUMNS: tuple[Column, ...] = (
    Column("requests", "Requests", "requests/s", _rate("request_success"), "low", 2.0, 0.2),
    Column("tokens", "Output tokens", "tokens/s", _rate("generation_tokens"), "low", 2.0, 5.0),
    Column("ttft_p99", "TTFT p99", "seconds", _p99("ttft"), "high", 1.5, 0.05),
    Column("itl_p99", "ITL p99", "seconds", _p99("itl"), "high", 1.5, 0.005),
    Column("e2e_p99", "E2E p99", "seconds", _p99("e2e"), "high", 1.5, 0.5),
    Column("waiting", "Waiting", "requests", _gauge("waiting", "sum"), "high", 2.0, 2.0),
    Column("kv", "KV cache", "ratio", _gauge("kv_usage", "max"), "high", 1.25, 0.1),
    Column("preemptions", "Preemptions", "events/s", _rate("preemptions"), "high", 2.0, 0.05),
)  # fmt: skip


def outlier(value: float, median: float, column: Column) -> bool:
    if abs(value - median) < column.floor:
        return False
    if column.worse == "high":
        return value >= median * column.factor
    return value * column.factor <= median


REPLICA_SPECS: Mapping[str, Spec] = {column.id: column.spec for column in COLUMNS}


def _at_last_step(result: QueryResult) -> dict[str, float]:
    """Each instance's value at the window's last step (absent there: no value, even if it
    had one earlier, so a replica that just went quiet does not show old numbers)."""
    found: dict[str, float] = {}
    for series in result.series:
        instance = series.labels.get("instance")
        if instance and series.values and series.values[-1] is not None:
            found[instance] = series.values[-1]
    return found


def _lower_bounds_at_last_step(result: QueryResult) -> dict[str, float]:
    """Instances whose quantile lies past their last finite bucket edge at the last step:
    the edge it exceeds (there is no value to show, only "more than this")."""
    found: dict[str, float] = {}
    for series in result.series:
        instance = series.labels.get("instance")
        if not instance or series.lower is None or series.upper is None or not series.values:
            continue
        lower, upper = series.lower[-1], series.upper[-1]
        if series.values[-1] is None and lower is not None and upper is None:
            found[instance] = lower
    return found


def _state(endpoint: Any) -> tuple[str, str]:
    if endpoint.last_status is None:
        return "unknown", "not scraped yet"
    if endpoint.last_status == ScrapeStatus.SUCCEEDED:
        return "up", ""
    since = endpoint.last_success_at
    when = f"since {since:%H:%M} UTC" if since else "since registration"
    return "down", f"down {when}: {endpoint.last_error or endpoint.last_error_kind}"


def replica_table(
    fleet: Fleet, *, end: datetime, backend: Backend, model_name: str | None = None
) -> dict[str, Any]:
    """The table on its own: `REPLICA_SPECS` evaluated once, at `end`."""
    window = Window(end, end, TABLE_WINDOW_SECONDS)
    scope = Scope(fleet, model_name=model_name)
    results = run_queries(REPLICA_SPECS, scope=scope, window=window, backend=backend)
    return replica_table_from(fleet, results=results, at=end)


def replica_table_from(
    fleet: Fleet, *, results: Mapping[str, QueryResult], at: datetime
) -> dict[str, Any]:
    """Rows for every enabled vLLM endpoint of `fleet` from the results of `REPLICA_SPECS`
    (run on any window ending at `at`: the overview runs them with its panels, so they
    share one store read or one parallel round-trip to Prometheus), JSON-safe."""
    values = {column.id: _at_last_step(results[column.id]) for column in COLUMNS}
    above = {column.id: _lower_bounds_at_last_step(results[column.id]) for column in COLUMNS}
    # Only the scrape state is needed: leave the inventory (a large JSON column) unread.
    endpoints = (
        endpoints_with_health(fleet=fleet)
        .select_related(None)
        .filter(enabled=True, kind=EndpointKind.VLLM)
    )
    rows: list[dict[str, Any]] = []
    for endpoint in endpoints:
        state, note = _state(endpoint)
        instance = endpoint.instance
        shown = {} if state == "down" else {c.id: values[c.id].get(instance) for c in COLUMNS}
        exceeds = {} if state == "down" else {
            c.id: edge for c in COLUMNS if (edge := above[c.id].get(instance)) is not None
        }  # fmt: skip
        rows.append(
            {"instance": instance, "state": state, "note": note, "values": shown,
             "above": exceeds}
        )  # fmt: skip
    # Medians over exact values only; a lower bound is flagged when even the bound is worse.
    medians = _medians(rows)
    for row in rows:
        row["flags"] = {
            c.id: c.worse
            for c in COLUMNS
            if (v := _shown_or_bound(row, c.id)) is not None
            and (m := medians.get(c.id)) is not None
            and outlier(v, m, c)
        }
    return {
        "window_seconds": TABLE_WINDOW_SECONDS,
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "columns": [
            {
                "id": c.id,
                "title": c.title,
                "unit": c.unit,
                "worse": c.worse,
                "factor": c.factor,
                "floor": c.floor,
            }
            for c in COLUMNS
        ],
        "medians": medians,
        "rows": rows,
        "notes": _column_notes(results),
    }


def _shown_or_bound(row: Mapping[str, Any], column_id: str) -> float | None:
    value = row["values"].get(column_id)
    return row["above"].get(column_id) if value is None else value


def _medians(rows: list[dict[str, Any]]) -> dict[str, float]:
    medians = {}
    for column in COLUMNS:
        present = [v for row in rows if (v := row["values"].get(column.id)) is not None]
        if len(present) >= MIN_REPLICAS_FOR_MEDIAN:
            medians[column.id] = statistics.median(present)
    return medians


def _column_notes(results: Mapping[str, QueryResult]) -> dict[str, str]:
    """Why a column is empty: the planner's or backend's message, never a silent blank."""
    notes = {}
    for column in COLUMNS:
        result = results[column.id]
        if not result.has_data:
            notes[column.id] = result.message or result.reason
    return notes
