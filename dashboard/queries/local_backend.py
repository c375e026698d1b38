"""Evaluating query specs over the embedded store with Prometheus semantics (pandas + numpy).

Results are `Vectors`: for each output label set, one float array on the
window's step grid, NaN where the series has no value. Aggregations follow
PromQL: `sum by` adds only the series present at a step, and a group with no
series present is absent (NaN), never 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dashboard.queries.local_math import (
    LOOKBACK_SECONDS,
    bucket_quantile,
    counter_deltas,
    instant_values,
    parse_le,
)
from dashboard.queries.local_series import LabelSet, RawSeries, StoreRead, store_read
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
    frame = pd.DataFrame(np.column_stack([values for _, values in items]))
    grouped = frame.T.groupby(np.array([ids[key] for key in keys]))
    # min_count=1: a group with no series present stays absent (NaN), never 0.
    table = grouped.sum(min_count=1) if agg == "sum" else getattr(grouped, _PANDAS_AGG[agg])()
    return {key: table.loc[i].to_numpy(dtype=float) for key, i in ids.items()}


def divide(numerator: Vectors, denominator: Vectors) -> Vectors:
    """One-to-one matching on identical label sets, as PromQL's `/` does."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return {k: numerator[k] / denominator[k] for k in numerator if k in denominator}


class _Evaluator:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.steps = np.array(plan.window.timestamps())
        self.warnings: list[str] = []
        self.failed: dict[str, int] = {}

    def read(self, resolved: ResolvedKey, names: set[str], spec: Spec, reach: float) -> StoreRead:
        """Samples of `names` reaching `reach` seconds before the window (range or lookback)."""
        start, end = self.plan.window.widened_by(reach)
        endpoints = dict(zip(resolved.endpoint_ids, resolved.instances, strict=True))
        read = store_read(
            endpoints=endpoints,
            names=frozenset(names),
            start=start,
            end=end,
            model_name=self.plan.model_name,
            match=getattr(spec, "match", ()),
        )
        for instance, count in read.failed_scrapes.items():
            self.failed[instance] = max(self.failed.get(instance, 0), count)
        return read

    def deltas(self, series: Sequence[RawSeries], spec: Rate | Quantile | Mean | FractionBelow,
               *, is_rate: bool = True) -> list[tuple[Mapping[str, str], np.ndarray]]:  # fmt: skip
        found = []
        for raw in series:
            finite = np.isfinite(raw.values)
            if not finite.all():
                self.warnings.append(
                    f"{raw.name} on {raw.labels.get('instance')}: non-finite counter samples "
                    "left out"
                )
            values = counter_deltas(
                raw.times[finite], raw.values[finite], self.steps, spec.window_seconds,
                is_rate=is_rate,
            )  # fmt: skip
            found.append((raw.labels, values))
        return found

    def ranged(self, spec: Rate | Quantile | Mean | FractionBelow, suffix: str) -> list[RawSeries]:
        resolved = self.plan.keys[spec.key]
        name = resolved.name + suffix
        return list(self.read(resolved, {name}, spec, spec.window_seconds).series)

    def evaluate(self, spec: Spec) -> Vectors:
        if isinstance(spec, Ratio):
            return divide(self.evaluate(spec.numerator), self.evaluate(spec.denominator))
        if isinstance(spec, Rate):
            suffix = ""
            if self.plan.keys[spec.key].type == "histogram":
                suffix = "_bucket" if "le" in spec.by else "_count"
            series = self.ranged(spec, suffix)
            is_rate = not isinstance(spec, Increase)
            return aggregate(self.deltas(series, spec, is_rate=is_rate), spec.by)
        if isinstance(spec, Quantile):
            return self.quantile(spec)
        if isinstance(spec, Mean):
            total = aggregate(self.deltas(self.ranged(spec, "_sum"), spec), spec.by)
            return divide(total, aggregate(self.deltas(self.ranged(spec, "_count"), spec), spec.by))
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

    def buckets(self, spec: Quantile | FractionBelow) -> list[RawSeries]:
        series = self.ranged(spec, "_bucket")
        check_histograms(series, self.plan.keys[spec.key].name)
        return series

    def quantile(self, spec: Quantile) -> Vectors:
        series = self.buckets(spec)
        per_le = aggregate(self.deltas(series, spec), (*spec.by, "le"))
        groups: dict[LabelSet, list[tuple[float, np.ndarray]]] = {}
        for key, values in per_le.items():
            labels = dict(key)
            edge = parse_le(labels.pop("le", "nan"))
            groups.setdefault(_group_key(labels, spec.by), []).append((edge, values))
        result: Vectors = {}
        for key, buckets in groups.items():
            edges = [edge for edge, _ in buckets]
            matrix = np.column_stack([values for _, values in buckets])
            result[key] = np.array([bucket_quantile(spec.q, edges, row) for row in matrix])
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
    histograms: dict[LabelSet, dict[float, pd.Series]] = {}
    for raw in series:
        labels = {k: v for k, v in raw.labels.items() if k != "le"}
        edge = parse_le(raw.labels.get("le", "nan"))
        histograms.setdefault(tuple(sorted(labels.items())), {})[edge] = pd.Series(
            raw.values, index=raw.times
        )
    for key, buckets in histograms.items():
        where = ", ".join(f"{k}={v}" for k, v in key)
        if math.inf not in buckets:
            raise BadHistogram(f"{name}{{{where}}} has no +Inf bucket")
        table = pd.DataFrame(buckets).sort_index(axis=1).dropna()
        falling = (table.diff(axis=1).iloc[:, 1:] < 0).any()
        if falling.any():
            edge = falling[falling].index[0]
            raise BadHistogram(f"{name}{{{where}}} has decreasing buckets at le={edge:g}")


def run_local(plan: Plan) -> QueryResult:
    evaluator = _Evaluator(plan)
    try:
        vectors = evaluator.evaluate(plan.spec)
    except BadHistogram as exc:
        return unavailable("bad-histogram", f"percentile unavailable: {exc}", plan.resolved_name)
    grid = tuple(float(t) for t in evaluator.steps)
    series = tuple(
        ResultSeries(dict(key), grid, tuple(float(v) for v in values))
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
