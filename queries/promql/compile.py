"""Compiling query specs to PromQL (Prometheus semantics; the local backend mirrors them).

    Rate      sum by (b) (rate(name{sel}[w]))            Increase: increase(...)
    Quantile  sum by (le, b) (rate(name_bucket{sel}[w])): the bucket rates, from which
              the backend computes the quantile and its bucket as the local backend does
              (queries.quantiles), never more precise than the buckets
    Mean      sum by (b) (rate(name_sum{sel}[w])) / sum by (b) (rate(name_count{sel}[w]))
    Fraction  sum by (b) (rate(name_bucket{sel,le=~"1|1\\.0"}[w]))
                / sum by (b) (rate(name_count{sel}[w]))
    Gauge     avg by (b) (name{sel})
    Ratio     (numerator) / (denominator)

`sel` always scopes to the instances of the fleet's endpoints that expose the
name, plus the scope's model and the spec's `match`, every value escaped. A key
that the scope's endpoints expose under several names (a fleet mid-upgrade) reads
each name on its own endpoints and joins them with `or`:
`rate(new{instance=~"a|b"}[w]) or rate(old{instance=~"c"}[w])`; an endpoint is in
one group only, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from queries.plan import NameGroup, Plan
from queries.promql.text import (
    any_of_regex,
    duration,
    le_matcher,
    matcher,
    selector,
    string_literal,
)
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

INF = float("inf")


@dataclass(frozen=True)
class Compiled:
    promql: str
    warnings: tuple[str, ...] = ()
    # Set for a Quantile: the PromQL returns bucket rates by (le, *by); the backend
    # computes this quantile from them.
    quantile: float | None = None


@dataclass(frozen=True)
class Bracket:
    """The bucket edges to use for `FractionBelow(le)`; `exact` when `le` is an edge itself."""

    lower: float | None
    upper: float
    exact: bool


def bracket(le: float, edges: Sequence[float]) -> Bracket:
    """Where `le` sits among `edges` (finite, sorted); above the last edge the upper is +Inf."""
    if le in edges:
        return Bracket(le, le, True)
    below = [e for e in edges if e < le]
    above = [e for e in edges if e > le]
    return Bracket(below[-1] if below else None, above[0] if above else INF, False)


def bracket_warning(spec: FractionBelow, name: str, where: Bracket) -> str:
    lower = "none" if where.lower is None else f"{where.lower:g}"
    return (
        f"le={spec.le:g} is not a bucket edge of {name}: showing the fractions at the "
        f"bracketing edges (bound=lower: {lower}, bound=upper: {where.upper:g}); "
        "the true value lies between them"
    )


def _aggregate(op: str, by: Sequence[str], inner: str) -> str:
    return f"{op} by ({', '.join(by)}) ({inner})" if by else f"{op}({inner})"


class _Compiler:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.warnings: list[str] = []

    def matchers(
        self, group: NameGroup, match: Mapping[str, str] | tuple[tuple[str, str], ...]
    ) -> list[str]:
        assert isinstance(match, tuple)  # a spec's __post_init__ makes `match` sorted pairs
        found = [matcher("instance", "=~", any_of_regex(group.instances))]
        if self.plan.model_name is not None:
            found.append(matcher("model_name", "=", self.plan.model_name))
        found.extend(matcher(label, "=", value) for label, value in match)
        return found

    def ranged(
        self, func: str, spec: Rate | Quantile | Mean | FractionBelow, suffix: str,
        extra: Sequence[str] = (),
    ) -> str:  # fmt: skip
        resolved = self.plan.keys[spec.key]
        return " or ".join(
            f"{func}({selector(group.name + suffix, [*self.matchers(group, spec.match), *extra])}"
            f"[{duration(spec.window_seconds)}])"
            for group in resolved.groups
        )

    def compile(self, spec: Spec) -> str:
        if isinstance(spec, Ratio):
            return f"({self.compile(spec.numerator)}) / ({self.compile(spec.denominator)})"
        if isinstance(spec, Rate):  # Increase too
            func = "increase" if isinstance(spec, Increase) else "rate"
            suffix = ""
            if self.plan.keys[spec.key].type == "histogram":
                suffix = "_bucket" if "le" in spec.by else "_count"
            return _aggregate("sum", spec.by, self.ranged(func, spec, suffix))
        if isinstance(spec, Quantile):
            return _aggregate("sum", ("le", *spec.by), self.ranged("rate", spec, "_bucket"))
        if isinstance(spec, Mean):
            total = _aggregate("sum", spec.by, self.ranged("rate", spec, "_sum"))
            return f"{total} / {_aggregate('sum', spec.by, self.ranged('rate', spec, '_count'))}"
        if isinstance(spec, FractionBelow):
            return self.fraction(spec)
        if isinstance(spec, Gauge):
            resolved = self.plan.keys[spec.key]
            return _aggregate(
                spec.agg,
                spec.by,
                " or ".join(
                    selector(group.name, self.matchers(group, spec.match))
                    for group in resolved.groups
                ),
            )
        raise TypeError(f"not a query spec: {type(spec).__name__}")

    def fraction_at(self, spec: FractionBelow, edge: float) -> str:
        below = _aggregate("sum", spec.by, self.ranged("rate", spec, "_bucket", [le_matcher(edge)]))
        return f"{below} / {_aggregate('sum', spec.by, self.ranged('rate', spec, '_count'))}"

    def fraction(self, spec: FractionBelow) -> str:
        resolved = self.plan.keys[spec.key]
        where = bracket(spec.le, resolved.buckets)
        if where.exact:
            return self.fraction_at(spec, spec.le)
        self.warnings.append(bracket_warning(spec, resolved.name, where))
        parts = []
        for bound, edge in (("lower", where.lower), ("upper", where.upper)):
            if edge is not None:
                labelled = f'label_replace({self.fraction_at(spec, edge)}, "bound", '
                parts.append(labelled + f'{string_literal(bound)}, "", "")')
        return " or ".join(parts)


def compile_plan(plan: Plan) -> Compiled:
    """The PromQL for a planned spec, with any warnings the compilation itself raised."""
    compiler = _Compiler(plan)
    text = compiler.compile(plan.spec)
    quantile = plan.spec.q if isinstance(plan.spec, Quantile) else None
    return Compiled(text, tuple(compiler.warnings), quantile)
