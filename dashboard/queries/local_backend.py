"""Evaluating query specs over the embedded store with Prometheus semantics (pandas + numpy).

Results are `Vectors`: for each output label set, one float array on the
window's step grid, NaN where the series has no value. Aggregations follow
PromQL: `sum by` adds only the series present at a step, and a group with no
series present is absent (NaN), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from dashboard.queries.local_math import (
    LOOKBACK_SECONDS,
    bucket_quantiles,
    counter_deltas,
    counter_deltas_rows,
    group_sums,
    instant_values,
    parse_le,
)
from dashboard.queries.local_series import LabelSet, RawSeries, ReadNeed, StoreRead, StoreWindow
from dashboard.queries.plan import Plan, ResolvedKey
from dashboard.queries.promql import bracket, bracket_warning
from dashboard.queries.result import QueryResult, ResultSeries, unavailable
from dashboard.queries.spec import (
    FractionBelow,
    Gauge,
    Increase,
    Mean,
    Quantile,
    Rate,
    Ratio,
    Spec,
)

Vectors = dict[LabelSet, np.ndarray]
T = TypeVar("T")
_PANDAS_AGG = {"avg": "mean", "max": "max", "min": "min"}


class BadHistogram(Exception):
    """The raw buckets cannot give a trustworthy quantile (reliability E30)."""


def _group_key(labels: Mapping[str, str], by: Sequence[str]) -> LabelSet:
    # PromQL drops empty labels, so a series without a `by` label joins the "" group.
    return tuple((label, labels[label]) for label in by if labels.get(label))


def aggregate(
    items: Sequence[tuple[Mapping[str, str], np.ndarray]], by: Sequence[str], agg: str = "sum"
) -> Vectors:
    if not items:
        return {}
    keys = [_group_key(labels, by) for labels, _ in items]
    ids = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    groups = np.array([ids[key] for key in keys])
    if agg == "sum":
        sums = group_sums(np.vstack([values for _, values in items]), groups, len(ids))
        if sums is not None:
            return {key: sums[i] for key, i in ids.items()}
    frame = pd.DataFrame(np.column_stack([values for _, values in items]))
    grouped = frame.T.groupby(groups)
    # min_count=1: a group with no series present stays absent (NaN), never 0.
    table = grouped.sum(min_count=1) if agg == "sum" else getattr(grouped, _PANDAS_AGG[agg])()
    # Group ids are 0..n-1 and groupby sorts them, so row i of the table is group i.
    rows = table.to_numpy(dtype=float)
    return {key: rows[i] for key, i in ids.items()}


def divide(numerator: Vectors, denominator: Vectors) -> Vectors:
    """One-to-one matching on identical label sets, as PromQL's `/` does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {k: numerator[k] / denominator[k] for k in numerator if k in denominator}


def _rate_suffix(resolved: ResolvedKey, spec: Rate) -> str:
    if resolved.type != "histogram":
        return ""
    return "_bucket" if "le" in spec.by else "_count"


def _suffixes(spec: Spec, resolved: ResolvedKey) -> tuple[str, ...]:
    """The samples of `resolved` a (non-Ratio) spec reads. Histogram maths also reads
    `_count` and `_bucket` to check one against the other (see check_counts)."""
    if isinstance(spec, Rate):
        return (_rate_suffix(resolved, spec),)
    if isinstance(spec, Quantile | FractionBelow):
        return ("_bucket", "_count")
    if isinstance(spec, Mean):
        return ("_sum", "_count", "_bucket")
    return ("",)


def _reach(spec: Spec) -> float:
    """How far before each step a spec looks: its range, or the gauge lookback."""
    return LOOKBACK_SECONDS if isinstance(spec, Gauge) else spec.window_seconds


def _need(plan: Plan, resolved: ResolvedKey, names: set[str], reach: float) -> ReadNeed:
    start, end = plan.window.widened_by(reach)
    endpoints = dict(zip(resolved.endpoint_ids, resolved.instances, strict=True))
    return ReadNeed(endpoints, frozenset(names), start, end)


def store_needs(plan: Plan) -> list[ReadNeed]:
    """Every store read evaluating `plan` makes, so one StoreWindow can serve many plans."""
    needs = []
    pending: list[Spec] = [plan.spec]
    while pending:
        spec = pending.pop()
        if isinstance(spec, Ratio):
            pending += [spec.numerator, spec.denominator]
            continue
        resolved = plan.keys[spec.key]
        names = {resolved.name + suffix for suffix in _suffixes(spec, resolved)}
        needs.append(_need(plan, resolved, names, _reach(spec)))
    return needs


class _Evaluator:
    def __init__(self, plan: Plan, store: StoreWindow | None) -> None:
        self.plan = plan
        self.store = store
        self.steps = np.array(plan.window.timestamps())
        self.warnings: list[str] = []
        self.failed: dict[str, int] = {}

    def cached(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()` once per shared store window: p50, p90 and p99 of one histogram read,
        check and differentiate the same buckets. Warnings and refusals replay on a hit."""
        assert self.store is not None
        memo = self.store.memo
        if key not in memo:
            before = len(self.warnings)
            try:
                memo[key] = (compute(), self.warnings[before:])
            except BadHistogram as exc:
                memo[key] = (exc, self.warnings[before:])
                raise
            return memo[key][0]
        value, warnings = memo[key]
        self.warnings.extend(warnings)
        if isinstance(value, BadHistogram):
            raise value
        return value

    def read(self, resolved: ResolvedKey, names: set[str], spec: Spec, reach: float) -> StoreRead:
        """Samples of `names` reaching `reach` seconds before the window (range or lookback)."""
        need = _need(self.plan, resolved, names, reach)
        if self.store is None:
            self.store = StoreWindow.covering(store_needs(self.plan))
        store = self.store
        assert store is not None  # a plan always reads something
        match = getattr(spec, "match", ())
        key = ("read", tuple(need.endpoints.items()), need.names, need.start, need.end,
               self.plan.model_name, match)  # fmt: skip
        read = self.cached(
            key, lambda: store.read(need, model_name=self.plan.model_name, match=match)
        )
        for instance, count in read.failed_scrapes.items():
            self.failed[instance] = max(self.failed.get(instance, 0), count)
        return read

    def deltas(self, series: Sequence[RawSeries], spec: Rate | Quantile | Mean | FractionBelow,
               *, is_rate: bool = True) -> list[tuple[Mapping[str, str], np.ndarray]]:  # fmt: skip
        assert self.store is not None
        # Series come from cached reads, which the memo keeps alive: their ids are stable.
        # One inner table per (range, rate, window), so a series costs one int lookup, and
        # one entry per series (its row): warnings, rare, have a table of their own.
        memo: dict[int, np.ndarray] = self.store.memo.setdefault(
            ("deltas", spec.window_seconds, is_rate, self.plan.window), {}
        )
        warned: dict[int, str] = self.store.memo.setdefault(
            ("deltas warnings", spec.window_seconds, is_rate, self.plan.window), {}
        )
        # Series sampled at the same times (one endpoint's buckets) go through in one pass;
        # a read hands the columns of one block the same `times` object, so most group
        # by identity and only the rest are compared.
        shared: dict[int, list[RawSeries]] = {}
        for raw in series:
            if id(raw) not in memo:
                shared.setdefault(id(raw.times), []).append(raw)
        # Keyed by (length, first time, last time): empty series give just (0,).
        batches: dict[tuple[float, ...], list[tuple[np.ndarray, list[RawSeries]]]] = {}
        for members in shared.values():
            times = members[0].times
            shape: tuple[float, ...] = (len(times), *times[:1].tolist(), *times[-1:].tolist())
            same = batches.setdefault(shape, [])
            for known, others in same:
                if np.array_equal(known, times):
                    others.extend(members)
                    break
            else:
                same.append((times, members))
        for same in batches.values():
            for times, members in same:
                matrix = np.vstack([raw.values for raw in members])
                finite = np.isfinite(matrix).all(axis=1)
                for raw in (raw for raw, ok in zip(members, finite, strict=True) if not ok):
                    kept = np.isfinite(raw.values)
                    warning = (
                        f"{raw.name} on {raw.labels.get('instance')}: non-finite counter "
                        "samples left out"
                    )
                    values = counter_deltas(
                        raw.times[kept], raw.values[kept], self.steps, spec.window_seconds,
                        is_rate=is_rate,
                    )  # fmt: skip
                    memo[id(raw)] = values
                    warned[id(raw)] = warning
                if not finite.any():
                    continue
                rows = counter_deltas_rows(
                    times, matrix[finite], self.steps, spec.window_seconds, is_rate=is_rate
                )
                done = (raw for raw, ok in zip(members, finite, strict=True) if ok)
                for raw, row in zip(done, rows, strict=True):
                    memo[id(raw)] = row
        if warned:
            self.warnings += [warned[id(raw)] for raw in series if id(raw) in warned]
        return [(raw.labels, memo[id(raw)]) for raw in series]

    def ranged(self, spec: Rate | Quantile | Mean | FractionBelow, suffix: str) -> list[RawSeries]:
        resolved = self.plan.keys[spec.key]
        name = resolved.name + suffix
        return list(self.read(resolved, {name}, spec, spec.window_seconds).series)

    def evaluate(self, spec: Spec) -> Vectors:
        if isinstance(spec, Ratio):
            return divide(self.evaluate(spec.numerator), self.evaluate(spec.denominator))
        if isinstance(spec, Rate):
            series = self.ranged(spec, _rate_suffix(self.plan.keys[spec.key], spec))
            is_rate = not isinstance(spec, Increase)
            return aggregate(self.deltas(series, spec, is_rate=is_rate), spec.by)
        if isinstance(spec, Quantile):
            return self.quantile(spec)
        if isinstance(spec, Mean):
            counts = self.ranged(spec, "_count")
            check_counts(self.ranged(spec, "_bucket"), counts, self.plan.keys[spec.key].name)
            total = aggregate(self.deltas(self.ranged(spec, "_sum"), spec), spec.by)
            return divide(total, aggregate(self.deltas(counts, spec), spec.by))
        if isinstance(spec, FractionBelow):
            return self.fraction(spec)
        if isinstance(spec, Gauge):
            resolved = self.plan.keys[spec.key]
            read = self.read(resolved, {resolved.name}, spec, LOOKBACK_SECONDS)
            items = [
                (raw.labels, instant_values(raw.times, raw.values, raw.events, self.steps))
                for raw in read.series
            ]
            return aggregate(items, spec.by, spec.agg)
        raise TypeError(f"not a query spec: {type(spec).__name__}")

    def histogram_key(self, spec: Quantile | FractionBelow | Mean) -> tuple[Any, ...]:
        resolved = self.plan.keys[spec.key]
        return (resolved.name, resolved.endpoint_ids, spec.window_seconds, spec.match,
                self.plan.model_name, self.plan.window)  # fmt: skip

    def buckets(self, spec: Quantile | FractionBelow) -> list[RawSeries]:
        series = self.ranged(spec, "_bucket")
        counts = self.ranged(spec, "_count")
        name = self.plan.keys[spec.key].name

        def checked() -> list[RawSeries]:
            check_histograms(series, name)
            check_counts(series, counts, name)
            return series

        return self.cached(("checked", *self.histogram_key(spec)), checked)

    def quantile(self, spec: Quantile) -> Vectors:
        series = self.buckets(spec)
        by = (*spec.by, "le")
        per_le = self.cached(
            ("per_le", by, *self.histogram_key(spec)),
            lambda: aggregate(self.deltas(series, spec), by),
        )
        groups: dict[LabelSet, list[tuple[float, np.ndarray]]] = {}
        for key, values in per_le.items():
            labels = dict(key)
            edge = parse_le(labels.pop("le", "nan"))
            groups.setdefault(_group_key(labels, spec.by), []).append((edge, values))
        result: Vectors = {}
        for key, buckets in groups.items():
            edges = [edge for edge, _ in buckets]
            matrix = np.column_stack([values for _, values in buckets])
            result[key] = bucket_quantiles(spec.q, edges, matrix)
        return result

    def fraction_at(self, spec: FractionBelow, edge: float, series: list[RawSeries]) -> Vectors:
        below = [raw for raw in series if parse_le(raw.labels.get("le", "nan")) == edge]
        numerator = aggregate(self.deltas(below, spec), spec.by)
        counts = aggregate(self.deltas(self.ranged(spec, "_count"), spec), spec.by)
        return divide(numerator, counts)

    def fraction(self, spec: FractionBelow) -> Vectors:
        resolved = self.plan.keys[spec.key]
        series = self.buckets(spec)
        where = bracket(spec.le, resolved.buckets)
        if where.exact:
            return self.fraction_at(spec, spec.le, series)
        self.warnings.append(bracket_warning(spec, resolved.name, where))
        result: Vectors = {}
        for bound, edge in (("lower", where.lower), ("upper", where.upper)):
            if edge is not None:
                for key, values in self.fraction_at(spec, edge, series).items():
                    result[tuple(sorted((*key, ("bound", bound))))] = values
        return result


def check_histograms(series: Sequence[RawSeries], name: str) -> None:
    """Refuse buckets without `+Inf`, or whose cumulative counts fall as `le` grows."""
    histograms: dict[LabelSet, dict[float, RawSeries]] = {}
    for raw in series:
        edge = parse_le(raw.labels.get("le", "nan"))
        histograms.setdefault(_histogram_key(raw.labels), {})[edge] = raw
    for key, buckets in histograms.items():
        where = ", ".join(f"{k}={v}" for k, v in key)
        if math.inf not in buckets:
            raise BadHistogram(f"{name}{{{where}}} has no +Inf bucket")
        edges = sorted(buckets)
        times = buckets[edges[0]].times
        if (
            all(buckets[e].times is times or np.array_equal(buckets[e].times, times) for e in edges)
            and (np.diff(times) > 0).all()
        ):
            # The usual case, every bucket scraped together: one matrix, no pandas.
            table = np.column_stack([buckets[e].values for e in edges])
            table = table[~np.isnan(table).any(axis=1)]
            falling = (np.diff(table, axis=1) < 0).any(axis=0)
            falling_edges = [edges[i + 1] for i in np.flatnonzero(falling)]
        else:
            frame = pd.DataFrame(
                {e: pd.Series(buckets[e].values, index=buckets[e].times) for e in edges}
            ).dropna()
            falling_series = (frame.diff(axis=1).iloc[:, 1:] < 0).any()
            falling_edges = list(falling_series[falling_series].index)
        if falling_edges:
            raise BadHistogram(
                f"{name}{{{where}}} has decreasing buckets at le={falling_edges[0]:g}"
            )


# `_count` and the `+Inf` bucket are the same number; allow only float summation noise.
COUNT_RELATIVE_TOLERANCE = 1e-9


def _histogram_key(labels: Mapping[str, str]) -> LabelSet:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "le"))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.10g}"


def check_counts(buckets: Sequence[RawSeries], counts: Sequence[RawSeries], name: str) -> None:
    """Refuse a histogram whose `_count` differs from its `+Inf` bucket at a sample time:
    the exporter is broken, and quantiles, fractions and means would all be wrong."""
    infinite = {}
    for raw in buckets:
        if parse_le(raw.labels.get("le", "nan")) == math.inf:
            infinite.setdefault(_histogram_key(raw.labels), raw)
    for raw in counts:
        key = _histogram_key(raw.labels)
        bucket = infinite.get(key)
        if bucket is None:
            continue  # no +Inf to compare with: check_histograms says so where it matters
        _, mine, theirs = np.intersect1d(raw.times, bucket.times, return_indices=True)
        count, inf = raw.values[mine], bucket.values[theirs]
        with np.errstate(invalid="ignore"):
            differs = np.abs(count - inf) > COUNT_RELATIVE_TOLERANCE * np.maximum(
                1.0, np.maximum(np.abs(count), np.abs(inf))
            )
        if differs.any():
            first = int(np.argmax(differs))
            where = ", ".join(f"{k}={v}" for k, v in key)
            raise BadHistogram(
                f"{name}{{{where}}} has _count {_number(count[first])} "
                f"but +Inf bucket {_number(inf[first])}"
            )


def run_local(plan: Plan, store: StoreWindow | None = None) -> QueryResult:
    """Evaluate `plan` over the embedded store; `store` is a window shared with other plans
    of the same page (it must cover `store_needs(plan)`), or None to read for this one."""
    evaluator = _Evaluator(plan, store)
    try:
        vectors = evaluator.evaluate(plan.spec)
    except BadHistogram as exc:
        return unavailable("bad-histogram", f"percentile unavailable: {exc}", plan.resolved_name)
    grid = tuple(float(t) for t in evaluator.steps)
    series = tuple(
        ResultSeries.from_array(dict(key), grid, values)
        for key, values in sorted(vectors.items())
        if np.isfinite(values).any()
    )
    warnings = list(plan.warnings) + list(dict.fromkeys(evaluator.warnings))
    warnings += [
        f"{instance}: {count} failed scrape(s) in the window, shown as gaps"
        for instance, count in sorted(evaluator.failed.items())
    ]
    if not series:
        return unavailable(
            "no-data", f"no samples of {plan.resolved_name} in this window", plan.resolved_name
        )
    status = "partial" if evaluator.failed else "ok"
    return QueryResult(status, series, "", plan.resolved_name, plan.message, tuple(warnings))
