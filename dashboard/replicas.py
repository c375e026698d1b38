"""The per-replica table: each vLLM replica's key figures against its peers or its own past.

On-call question: "is one replica sick, or the whole fleet?" Every figure is
taken over the last `TABLE_WINDOW_SECONDS` at the end of the viewed window,
per `instance` (data-parallel engines behind one server add up: queues and
rates are summed, KV usage is the fullest engine). A replica that stopped
answering is shown as down with the scraper's reason, never as zeros, and is
left out of every median.

Outliers: a value is flagged when it is `factor` times worse than what it is
compared with *and* differs from it by at least `floor` (so 0.02 against 0.01
is not an incident). "Worse" is higher for latency, queues, KV and preemptions
and lower for throughput (a starved or wedged replica). What it is compared with:

- the median of the replicas serving the same model (a 70b replica is not slow
  next to 8b ones), when at least `MIN_REPLICAS_FOR_MEDIAN` of them report the figure;
- otherwise the replica's own previous hour (the hour before the table's slice:
  the median of its twelve 5-minute figures there);
- otherwise nothing: no flag, and the row says why.

Each row says, per figure, what it was compared with (`compared_with`, `references`,
`titles`, `not_compared`), and each column lists the comparisons it used. The
`medians` row stays the whole fleet's median, as its "fleet median" label says;
the per-model medians the flags use are in `medians_by_model`.

Quantiles come from histogram buckets, so each p99 carries its bucket (`buckets`:
[lower, upper], upper None past the last edge). One whose bucket is wide by
`dashboard.precision`'s rule is listed in `wide` and shown as its bucket, its
interpolated value only in `interpolated`; it is never flagged on that value alone,
only when the whole bucket is past the flag threshold (and "bucket too wide to
compare" when the bucket straddles it). The same holds for a p99 past the last edge.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from dashboard.precision import WIDE_BUCKET_FRACTION, bucket_is_wide
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
# A model with too few replicas for a median is held to its own past: this long before
# the table's slice, in slices as long as the table's.
BASELINE_SECONDS = 3600.0


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


# Which model each replica serves: its request rate per `model_name`. A replica serving
# several models (rare) goes with the one it served most requests of in the table's slice
# (ties: the first by name), and is compared with that model's replicas only.
MODEL_SPEC = "model"
REPLICA_SPECS: Mapping[str, Spec] = {column.id: column.spec for column in COLUMNS} | {
    MODEL_SPEC: Rate(
        "request_success", by=("instance", "model_name"), window_seconds=TABLE_WINDOW_SECONDS
    )
}
# The same figures over the previous hour (see `baseline_windows`), for models with too
# few replicas for a median. Run them in the same `run_queries` call as `REPLICA_SPECS`.
BASELINE = "previous_hour"
BASELINE_SPECS: Mapping[str, Spec] = {f"{BASELINE}|{c.id}": c.spec for c in COLUMNS}
UNKNOWN_MODEL = ""  # replicas whose requests carry no `model_name`: compared among themselves


def baseline_windows(end: datetime) -> dict[str, Window]:
    """`BASELINE_SPECS`' windows for a table at `end`: a point every `TABLE_WINDOW_SECONDS`
    from `end - BASELINE_SECONDS` to the start of the table's slice, so the twelve
    5-minute figures cover the hour just before it, and none of the slice itself."""
    window = Window(
        end - timedelta(seconds=BASELINE_SECONDS),
        end - timedelta(seconds=TABLE_WINDOW_SECONDS),
        TABLE_WINDOW_SECONDS,
    )
    return dict.fromkeys(BASELINE_SPECS, window)


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


def _buckets_at_last_step(result: QueryResult) -> dict[str, tuple[float, float | None]]:
    """Each instance's bucket (lower, upper) at the last step, for a quantile from buckets:
    upper None past the last finite edge."""
    found: dict[str, tuple[float, float | None]] = {}
    for series in result.series:
        instance = series.labels.get("instance")
        if not instance or series.lower is None or series.upper is None or not series.values:
            continue
        if series.lower[-1] is not None:
            found[instance] = (series.lower[-1], series.upper[-1])
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
    """The table on its own: `REPLICA_SPECS` evaluated once, at `end`, and `BASELINE_SPECS`
    over the hour before, in one `run_queries` call (one store read, one parallel batch)."""
    window = Window(end, end, TABLE_WINDOW_SECONDS)
    scope = Scope(fleet, model_name=model_name)
    results = run_queries(
        {**REPLICA_SPECS, **BASELINE_SPECS},
        scope=scope,
        window=window,
        backend=backend,
        windows=baseline_windows(end),
    )
    return replica_table_from(fleet, results=results, at=end)


def replica_table_from(
    fleet: Fleet, *, results: Mapping[str, QueryResult], at: datetime
) -> dict[str, Any]:
    """Rows for every enabled vLLM endpoint of `fleet` from the results of `REPLICA_SPECS`
    (run on any window ending at `at`: the overview runs them with its panels, so they
    share one store read or one parallel round-trip to Prometheus), JSON-safe.

    `results` may also hold `BASELINE_SPECS`' (on `baseline_windows(at)`); without them a
    model with too few replicas for a median is not compared, and its rows say so."""
    values = {column.id: _at_last_step(results[column.id]) for column in COLUMNS}
    above = {column.id: _lower_bounds_at_last_step(results[column.id]) for column in COLUMNS}
    buckets = {column.id: _buckets_at_last_step(results[column.id]) for column in COLUMNS}
    models = models_served(results.get(MODEL_SPEC))
    baselines: dict[str, dict[str, float]] | None = None
    if all(name in results for name in BASELINE_SPECS):
        baselines = {c.id: _baseline(results[f"{BASELINE}|{c.id}"]) for c in COLUMNS}
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
        held = {} if state == "down" else {
            c.id: [*bucket] for c in COLUMNS if (bucket := buckets[c.id].get(instance)) is not None
        }  # fmt: skip
        rows.append(
            {"instance": instance, "state": state, "note": note, "values": shown,
             "above": exceeds, "model": None if state == "down" else models.get(instance),
             "buckets": held, **_precision(shown, held)}
        )  # fmt: skip
    # Medians over exact values only; a lower bound is flagged when even the bound is worse.
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["state"] != "down":
            groups.setdefault(row["model"] or UNKNOWN_MODEL, []).append(row)
    by_model = {model: _medians(members) for model, members in groups.items()}
    counts = {
        model: {c.id: _reporting(members, c.id) for c in COLUMNS}
        for model, members in groups.items()
    }
    used: dict[str, set[str]] = {c.id: set() for c in COLUMNS}
    for row in rows:
        _compare(row, by_model, counts, baselines, used)
    fleet_medians = _medians(rows)
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
                # What this column's values were compared with, one phrase per model.
                "compared_with": sorted(used[c.id]),
            }
            for c in COLUMNS
        ],
        # The whole fleet's median, as the table's "fleet median" row is labelled; flags
        # are held to the per-model medians below (or to each replica's previous hour).
        "medians": fleet_medians,
        # The bucket the fleet median lies in for quantile columns (the medians of the
        # replicas' lower and upper edges bracket it), and which of them are wide.
        **_median_precision(rows, fleet_medians),
        # The rule by which a quantile is shown as its bucket (dashboard.precision).
        "wide_bucket_fraction": WIDE_BUCKET_FRACTION,
        "medians_by_model": {_model_label(m): medians for m, medians in by_model.items()},
        "replicas_by_model": {_model_label(m): len(members) for m, members in groups.items()},
        "baseline_seconds": BASELINE_SECONDS if baselines is not None else None,
        "rows": rows,
        "notes": _column_notes(results),
    }


def _compare(
    row: dict[str, Any],
    by_model: Mapping[str, Mapping[str, float]],
    counts: Mapping[str, Mapping[str, int]],
    baselines: Mapping[str, Mapping[str, float]] | None,
    used: dict[str, set[str]],
) -> None:
    """Fill `row`'s flags, what each value was compared with, the reference value, a
    title per cell, and why a value was not compared (no peers, no past)."""
    flags: dict[str, str] = {}
    compared: dict[str, str] = {}
    references: dict[str, float] = {}
    titles: dict[str, str] = {}
    not_compared: dict[str, str] = {}
    row.update(
        flags=flags,
        compared_with=compared,
        references=references,
        titles=titles,
        not_compared=not_compared,
    )
    if row["state"] == "down":
        return
    model = row["model"] or UNKNOWN_MODEL
    serving = f"serving {model}" if model else "whose model is unknown"
    for c in COLUMNS:
        value = _shown_or_bound(row, c.id)
        if value is None:
            continue
        median = by_model[model].get(c.id)
        own = None if baselines is None else baselines[c.id].get(row["instance"])
        if median is not None:
            reference = median
            against = f"median of {counts[model][c.id]} replicas {serving}"
            used[c.id].add(against)
        elif own is not None:
            reference = own
            against = "its own previous hour"
            used[c.id].add(f"each replica's own previous hour ({_model_label(model)})")
        else:
            peers = counts[model][c.id]
            few = (
                "no peers serving this model"
                if peers <= 1 and model
                else f"only {peers} replica(s) {serving} report it (a median needs "
                f"{MIN_REPLICAS_FOR_MEDIAN})"
            )
            past = (
                "no baseline an hour ago"
                if baselines is not None
                else "its previous hour was not read for this view"
            )
            not_compared[c.id] = f"{few} and {past}"
            titles[c.id] = f"not compared: {not_compared[c.id]}"
            continue
        compared[c.id] = against
        references[c.id] = reference
        article = "the " if against.startswith("median") else ""
        shown = _formatted(reference, c.unit)
        if c.id in row["above"] or c.id in row["wide"]:
            # Only the bucket is known: flagged when even its least-bad end is an outlier,
            # cleared when even its worst end is not, and otherwise not compared at all.
            lower, upper = row["buckets"][c.id]
            best, worst = (lower, upper) if c.worse == "high" else (upper, lower)
            if best is not None and outlier(best, reference, c):
                flags[c.id] = c.worse
                titles[c.id] = (
                    f"{c.worse} against {article}{against} ({shown}): the whole bucket is "
                    "past the flag threshold"
                )
            elif worst is not None and not outlier(worst, reference, c):
                titles[c.id] = (
                    f"compared with {article}{against} ({shown}): the whole bucket is within "
                    "the flag threshold"
                )
            else:
                titles[c.id] = f"bucket too wide to compare with {article}{against} ({shown})"
        elif outlier(value, reference, c):
            flags[c.id] = c.worse
            titles[c.id] = f"{c.worse} against {article}{against} ({shown})"
        else:
            titles[c.id] = f"compared with {article}{against} ({shown})"


def _precision(
    values: Mapping[str, float | None], buckets: Mapping[str, Sequence[float | None]]
) -> dict[str, Any]:
    """`wide`: the quantile columns shown as their bucket (dashboard.precision's rule);
    `interpolated`: for every quantile with a value, what the value is ("TTFT p99
    interpolated as 635.2 s within (160 s, 640 s]"), for the cell's title."""
    wide: list[str] = []
    interpolated: dict[str, str] = {}
    for c in COLUMNS:
        value, bucket = values.get(c.id), buckets.get(c.id)
        if value is None or bucket is None:
            continue
        lower, upper = bucket
        if bucket_is_wide(value, lower, upper):
            wide.append(c.id)
        interpolated[c.id] = (
            f"{c.title} interpolated as {_significant(value, c.unit)} within "
            f"({_significant(lower, c.unit)}, {_significant(upper, c.unit)}]"
        )
    return {"wide": wide, "interpolated": interpolated}


def _median_precision(rows: list[dict[str, Any]], medians: Mapping[str, float]) -> dict[str, Any]:
    """The fleet median's bucket per quantile column: [median of the lower edges, median of
    the upper edges] of the replicas the median is taken over (each replica's p99 lies in
    its bucket, so their median lies between those two), and whether it is wide."""
    found: dict[str, list[float]] = {}
    for c in COLUMNS:
        if c.id not in medians:
            continue
        edges = [
            row["buckets"][c.id]
            for row in rows
            if row["values"].get(c.id) is not None and c.id in row["buckets"]
        ]
        if len(edges) >= MIN_REPLICAS_FOR_MEDIAN and all(high is not None for _, high in edges):
            found[c.id] = [
                statistics.median(low for low, _ in edges),
                statistics.median(high for _, high in edges),
            ]
    wide = [c for c, (low, high) in found.items() if bucket_is_wide(medians[c], low, high)]
    return {"median_buckets": found, "medians_wide": wide}


def _significant(value: float | None, unit: str) -> str:
    """4 significant figures, as the charts' hover shows them; milliseconds under a second."""
    if value is None:
        return "+Inf"
    scale, shown = (1000.0, "ms") if unit == "seconds" and abs(value) < 1 else (1.0, unit)
    if unit == "seconds" and shown == "seconds":
        shown = "s"
    digits = float(f"{value * scale:.4g}")
    return f"{digits:,.6f}".rstrip("0").rstrip(".") + f" {shown}"


def _formatted(value: float, unit: str) -> str:
    """As the page shows figures: milliseconds under a second, ratios as percentages."""
    if unit == "seconds":
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "ratio":
        return f"{value * 100:.0f}%"
    return f"{value:.3g} {unit}"


def _model_label(model: str) -> str:
    return model or "model unknown"


def models_served(result: QueryResult | None) -> dict[str, str]:
    """Each instance's model: the one it served most requests of at the last step (ties:
    the first by name; a series with no rate there counts below any rate)."""
    best: dict[str, tuple[float, str]] = {}
    for series in result.series if result is not None and result.has_data else ():
        instance, model = series.labels.get("instance"), series.labels.get("model_name")
        if not instance or not model:
            continue
        last = series.values[-1] if series.values else None
        rate = -1.0 if last is None else last
        held = best.get(instance)
        if held is None or (-rate, model) < (-held[0], held[1]):
            best[instance] = (rate, model)
    return {instance: model for instance, (_, model) in best.items()}


def _baseline(result: QueryResult) -> dict[str, float]:
    """Each instance's median over the previous hour's 5-minute figures (exact values only:
    a lower bound says too little to hold the present to)."""
    if not result.has_data:
        return {}
    found: dict[str, float] = {}
    for series in result.series:
        instance = series.labels.get("instance")
        present = [v for v in series.values if v is not None]
        if instance and present:
            found[instance] = statistics.median(present)
    return found


def _shown_or_bound(row: Mapping[str, Any], column_id: str) -> float | None:
    value = row["values"].get(column_id)
    return row["above"].get(column_id) if value is None else value


def _reporting(rows: list[dict[str, Any]], column_id: str) -> int:
    return sum(1 for row in rows if row["values"].get(column_id) is not None)


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
