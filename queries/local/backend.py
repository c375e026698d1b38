"""Evaluating query specs over the embedded store with Prometheus semantics (numpy).

Results are `Vectors`: for each output label set, one float array on the
window's step grid, NaN where the series has no value. Aggregations follow
PromQL: `sum by` adds only the series present at a step, and a group with no
series present is absent (NaN), never 0. They give pandas' groupby results to
the bit (tests/queries/local/test_fast_paths.py holds them to it); pandas'
per-call overhead was a tenth of a render, so they are done in numpy here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np

from inventory.store import LabelSet, ReadNeed, SeriesChunk, StoreWindow
from queries.histogram_math import parse_le
from queries.local.functions import (
    LOOKBACK_SECONDS,
    counter_deltas_rows,
    group_reduce,
    group_sums,
    instant_values_rows,
)
from queries.local.histogram_checks import BadHistogram, check_counts, check_histograms
from queries.plan import NameGroup, Plan, ResolvedKey
from queries.promql import bracket, bracket_warning
from queries.quantiles import dropped_edges_warning, quantiles_from_buckets
from queries.result import QueryResult, ResultSeries, Status, unavailable
from queries.spec import (
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


def _group_key(labels: Mapping[str, str], by: Sequence[str]) -> LabelSet:
    # PromQL drops empty labels, so a series without a `by` label joins the "" group.
    return tuple((label, labels[label]) for label in by if labels.get(label))


# Rows to aggregate: each row's labels, a (rows, steps) matrix of their values, and the
# memo of the chunk the labels come from (None for other rows), where their groups keep.
Part = tuple[Sequence[Mapping[str, str]], np.ndarray, dict | None]


def _row_groups(
    labels: Sequence[Mapping[str, str]], by: Sequence[str]
) -> tuple[np.ndarray, list[LabelSet]]:
    """Each row's group as an index into the returned keys, keys in order of first row."""
    keys: dict[LabelSet, int] = {}
    if not by:
        return np.zeros(len(labels), dtype=np.intp), [()]
    # One key per distinct tuple of `by` values: rows mostly repeat a few groups.
    seen: dict[tuple[str | None, ...], int] = {}
    groups = np.empty(len(labels), dtype=np.intp)
    for i, row in enumerate(labels):
        values = tuple(map(row.get, by))
        group = seen.get(values)
        if group is None:
            group = seen[values] = keys.setdefault(_group_key(row, by), len(keys))
        groups[i] = group
    return groups, list(keys)


def aggregate_parts(parts: Sequence[Part], by: Sequence[str], agg: str = "sum") -> Vectors:
    """`agg by (by)` of every row of `parts`, in their order; groups are numbered in
    order of their first row, which fixes the order sums are added in."""
    parts = [part for part in parts if len(part[0])]
    if not parts:
        return {}
    ids: dict[LabelSet, int] = {}
    numbered = []
    for labels, _, memo in parts:
        found = None if memo is None else memo.get(("groups", tuple(by)))
        if found is None:
            found = _row_groups(labels, by)
            if memo is not None:  # a chunk's rows: the same groups for every window
                memo[("groups", tuple(by))] = found
        local, keys = found
        numbered.append(np.array([ids.setdefault(key, len(ids)) for key in keys])[local])
    groups = numbered[0] if len(numbered) == 1 else np.concatenate(numbered)
    matrix = parts[0][1] if len(parts) == 1 else np.vstack([values for _, values, _ in parts])
    if agg == "sum":
        sums = group_sums(matrix, groups, len(ids))
        return {key: sums[i] for key, i in ids.items()}
    rows = group_reduce(matrix, groups, len(ids), agg)
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


def _reach(spec: Rate | Quantile | Mean | FractionBelow | Gauge) -> float:
    """How far before each step a spec looks: its range, or the gauge lookback."""
    return LOOKBACK_SECONDS if isinstance(spec, Gauge) else spec.window_seconds


def _need(plan: Plan, group: NameGroup, suffixes: Iterable[str], reach: float) -> ReadNeed:
    """What reading one name group of a key takes: its endpoints, under its own name."""
    start, end = plan.window.widened_by(reach)
    endpoints = dict(zip(group.endpoint_ids, group.instances, strict=True))
    return ReadNeed(endpoints, frozenset(group.name + s for s in suffixes), start, end)


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
        suffixes = _suffixes(spec, resolved)
        needs += [_need(plan, group, suffixes, _reach(spec)) for group in resolved.groups]
    return needs


class Evaluator:
    def __init__(self, plan: Plan, store: StoreWindow | None) -> None:
        self.plan = plan
        self.store = store
        self.steps = np.array(plan.window.timestamps())
        self.warnings: list[str] = []
        self.failed: dict[str, int] = {}
        # Quantile results: the bucket each value fell in, by output label set.
        self.bounds: dict[LabelSet, tuple[np.ndarray, np.ndarray]] = {}

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

    def read(
        self, resolved: ResolvedKey, suffix: str, spec: Spec, reach: float
    ) -> tuple[SeriesChunk, ...]:
        """Samples of the key's `suffix` series reaching `reach` seconds before the window
        (range or lookback): every name group under its own name, chunks of all groups
        together (each endpoint is in one group, so nothing is read twice)."""
        if self.store is None:
            self.store = StoreWindow.covering(store_needs(self.plan))
        store = self.store
        assert store is not None  # a plan always reads something
        match = getattr(spec, "match", ())
        chunks: list[SeriesChunk] = []
        for group in resolved.groups:
            need = _need(self.plan, group, (suffix,), reach)
            key = ("read", tuple(need.endpoints.items()), need.names, need.start, need.end,
                   self.plan.model_name, match)  # fmt: skip
            read = self.cached(
                key, partial(store.chunks, need, model_name=self.plan.model_name, match=match)
            )
            for instance, count in read.failed_scrapes.items():
                self.failed[instance] = max(self.failed.get(instance, 0), count)
            chunks.extend(read.chunks)
        return tuple(chunks)

    def deltas(
        self, chunks: Sequence[SeriesChunk], spec: Rate | Quantile | Mean | FractionBelow,
        *, is_rate: bool = True,
    ) -> list[Part]:  # fmt: skip
        """`rate` (or `increase`) of every row of `chunks`: one numpy pass per batch of
        chunks sampled at the same instants, once per shared store window."""
        assert self.store is not None
        # Chunks come from cached reads, which the memo keeps alive: their ids are stable.
        memo: dict[int, tuple[np.ndarray, tuple[str, ...]]] = self.store.memo.setdefault(
            ("deltas", spec.window_seconds, is_rate, self.plan.window), {}
        )
        todo = [chunk for chunk in chunks if id(chunk) not in memo]
        for batch in _same_times(todo):
            # Instances scraped at the same instants (a fleet scraped together): one pass.
            values = batch[0].values if len(batch) == 1 else np.vstack([c.values for c in batch])
            present = batch[0].present if len(batch) == 1 else None
            deltas, warned = _row_deltas(
                batch[0].times, values, present, self.steps, spec.window_seconds, is_rate=is_rate
            )
            start = 0
            for chunk in batch:
                rows = len(chunk.labels)
                warnings = tuple(
                    f"{chunk.name} on {chunk.labels[row - start].get('instance')}: "
                    "non-finite counter samples left out"
                    for row in warned
                    if start <= row < start + rows
                )
                memo[id(chunk)] = (deltas[start : start + rows], warnings)
                start += rows
        parts: list[Part] = []
        for chunk in chunks:
            values, warnings = memo[id(chunk)]
            self.warnings += warnings
            parts.append((chunk.labels, values, chunk.memo))
        return parts

    def ranged(
        self, spec: Rate | Quantile | Mean | FractionBelow, suffix: str
    ) -> tuple[SeriesChunk, ...]:
        return self.read(self.plan.keys[spec.key], suffix, spec, spec.window_seconds)

    def evaluate(self, spec: Spec) -> Vectors:
        if isinstance(spec, Ratio):
            return divide(self.evaluate(spec.numerator), self.evaluate(spec.denominator))
        if isinstance(spec, Rate):
            chunks = self.ranged(spec, _rate_suffix(self.plan.keys[spec.key], spec))
            is_rate = not isinstance(spec, Increase)
            return aggregate_parts(self.deltas(chunks, spec, is_rate=is_rate), spec.by)
        if isinstance(spec, Quantile):
            return self.quantile(spec)
        if isinstance(spec, Mean):
            counts = self.ranged(spec, "_count")
            name = self.plan.keys[spec.key].name
            self.cached(
                ("counts checked", *self.histogram_key(spec)),
                lambda: check_counts(self.ranged(spec, "_bucket"), counts, name),
            )
            total = aggregate_parts(self.deltas(self.ranged(spec, "_sum"), spec), spec.by)
            return divide(total, aggregate_parts(self.deltas(counts, spec), spec.by))
        if isinstance(spec, FractionBelow):
            return self.fraction(spec)
        if isinstance(spec, Gauge):
            chunks = self.read(self.plan.keys[spec.key], "", spec, LOOKBACK_SECONDS)
            return aggregate_parts(self.instant(chunks), spec.by, spec.agg)
        raise TypeError(f"not a query spec: {type(spec).__name__}")

    def instant(self, chunks: Sequence[SeriesChunk]) -> list[Part]:
        """Each row's value at each step; one pass per batch of instances scraped at the
        same instants (stale markers come from each instance's own events)."""
        values: dict[int, np.ndarray] = {}
        for batch in _same_times(chunks, by_events=True):
            stacked = batch[0].values if len(batch) == 1 else np.vstack([c.values for c in batch])
            found = instant_values_rows(batch[0].times, stacked, batch[0].events, self.steps)
            start = 0
            for chunk in batch:
                values[id(chunk)] = found[start : start + len(chunk.labels)]
                start += len(chunk.labels)
        return [(chunk.labels, values[id(chunk)], chunk.memo) for chunk in chunks]

    def histogram_key(self, spec: Quantile | FractionBelow | Mean) -> tuple[Any, ...]:
        resolved = self.plan.keys[spec.key]
        return (resolved.names, resolved.endpoint_ids, spec.window_seconds, spec.match,
                self.plan.model_name, self.plan.window)  # fmt: skip

    def buckets(self, spec: Quantile | FractionBelow) -> tuple[SeriesChunk, ...]:
        chunks = self.ranged(spec, "_bucket")
        counts = self.ranged(spec, "_count")
        name = self.plan.keys[spec.key].name

        def checked() -> tuple[SeriesChunk, ...]:
            check_histograms(chunks, name)
            check_counts(chunks, counts, name)
            return chunks

        return self.cached(("checked", *self.histogram_key(spec)), checked)

    def quantile(self, spec: Quantile) -> Vectors:
        chunks = self.buckets(spec)
        by = (*spec.by, "le")
        per_le = self.cached(
            ("per_le", by, *self.histogram_key(spec)),
            lambda: aggregate_parts(self.deltas(chunks, spec), by),
        )
        resolved = self.plan.keys[spec.key]
        found = quantiles_from_buckets(spec.q, per_le, spec.by, resolved)
        warning = dropped_edges_warning(resolved.name, found.dropped)
        if warning is not None:
            self.warnings.append(warning)
        self.bounds.update(found.bounds)
        return found.values

    def fraction_at(
        self, spec: FractionBelow, edge: float, chunks: Sequence[SeriesChunk]
    ) -> Vectors:
        below: list[Part] = []
        for labels, values, _ in self.deltas(chunks, spec):
            rows = [i for i, row in enumerate(labels) if parse_le(row.get("le", "nan")) == edge]
            if rows:
                below.append(([labels[i] for i in rows], values[rows], None))
        numerator = aggregate_parts(below, spec.by)
        counts = aggregate_parts(self.deltas(self.ranged(spec, "_count"), spec), spec.by)
        return divide(numerator, counts)

    def fraction(self, spec: FractionBelow) -> Vectors:
        resolved = self.plan.keys[spec.key]
        chunks = self.buckets(spec)
        where = bracket(spec.le, resolved.buckets)
        if where.exact:
            return self.fraction_at(spec, spec.le, chunks)
        self.warnings.append(bracket_warning(spec, resolved.name, where))
        result: Vectors = {}
        for bound, edge in (("lower", where.lower), ("upper", where.upper)):
            if edge is not None:
                for key, values in self.fraction_at(spec, edge, chunks).items():
                    result[tuple(sorted((*key, ("bound", bound))))] = values
        return result


def _same_times(
    chunks: Sequence[SeriesChunk], *, by_events: bool = False
) -> list[list[SeriesChunk]]:
    """`chunks` in batches sampled at identical times (and, `by_events`, with identical
    events); a chunk with missing samples (`present`) goes alone."""
    batches: dict[tuple[float, ...], list[list[SeriesChunk]]] = {}
    alone = []
    for chunk in chunks:
        if chunk.present is not None:
            alone.append([chunk])
            continue
        times = chunk.times
        shape: tuple[float, ...] = (len(times), *times[:1].tolist(), *times[-1:].tolist())
        same = batches.setdefault(shape, [])
        for batch in same:
            if (batch[0].times is times or np.array_equal(batch[0].times, times)) and (
                not by_events or np.array_equal(batch[0].events, chunk.events)
            ):
                batch.append(chunk)
                break
        else:
            same.append([chunk])
    return [batch for same in batches.values() for batch in same] + alone


def _row_deltas(
    times: np.ndarray, values: np.ndarray, present: np.ndarray | None, steps: np.ndarray,
    range_seconds: float, *, is_rate: bool,
) -> tuple[np.ndarray, list[int]]:  # fmt: skip
    """Counter deltas of each row of `values` sampled at `times` (where `present`, if
    given), and the rows whose stored samples were not all finite: those samples are
    left out, as gaps, and the caller warns."""
    finite = np.isfinite(values)
    whole = finite.all(axis=1) if present is None else np.zeros(len(values), bool)
    if whole.all():
        return counter_deltas_rows(times, values, steps, range_seconds, is_rate=is_rate), []
    out = np.empty((len(values), len(steps)))
    if whole.any():
        out[whole] = counter_deltas_rows(
            times, values[whole], steps, range_seconds, is_rate=is_rate
        )
    warned = []
    for i in np.flatnonzero(~whole):
        sampled = np.ones(len(times), bool) if present is None else present[i]
        if not finite[i][sampled].all():
            warned.append(int(i))
        kept = sampled & finite[i]
        out[i] = counter_deltas_rows(
            times[kept], values[i][np.newaxis, kept], steps, range_seconds, is_rate=is_rate
        )[0]
    return out, warned


def run_local(plan: Plan, store: StoreWindow | None = None) -> QueryResult:
    """Evaluate `plan` over the embedded store; `store` is a window shared with other plans
    of the same page (it must cover `store_needs(plan)`), or None to read for this one."""
    evaluator = Evaluator(plan, store)
    try:
        vectors = evaluator.evaluate(plan.spec)
    except BadHistogram as exc:
        return unavailable("bad-histogram", f"percentile unavailable: {exc}", plan.resolved_name)
    grid = tuple(float(t) for t in evaluator.steps)
    bounds = evaluator.bounds if isinstance(plan.spec, Quantile) else {}
    series = tuple(
        ResultSeries.from_array(dict(key), grid, values, bounds=bounds.get(key))
        for key, values in sorted(vectors.items())
        if np.isfinite(values).any() or key in bounds and np.isfinite(bounds[key][0]).any()
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
    status: Status = "partial" if evaluator.failed else "ok"
    return QueryResult(status, series, "", plan.resolved_name, plan.message, tuple(warnings))
