"""The walk over `promql_parser`'s tree: each vector selector with the functions and
aggregations around it, turned into `Selector`s."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

import promql_parser

from blindspots.promql.lexer import Reference
from blindspots.promql.syntax import PLACEHOLDER_RE
from blindspots.promql.variables import name_from_variables, variable_matcher
from blindspots.types import Matcher, Selector

# --- the walk ------------------------------------------------------------------------------


def vector_selectors(
    tree: promql_parser.Expr,
) -> Iterator[tuple[promql_parser.VectorSelector, tuple[str, ...]]]:
    """Vector selectors in source order, each with its enclosing functions outermost
    first. Iterative: a long chain of `a + b + c ...` does not hit the recursion limit."""
    stack: list[tuple[object, tuple[str, ...]]] = [(tree, ())]
    while stack:
        node, functions = stack.pop()
        if isinstance(node, promql_parser.VectorSelector):
            yield node, functions
        elif isinstance(node, promql_parser.MatrixSelector):
            stack.append((node.vector_selector, functions))
        elif isinstance(node, promql_parser.Call):
            inner = (*functions, node.func.name)
            stack.extend((arg, inner) for arg in reversed(node.args))
        elif isinstance(node, promql_parser.AggregateExpr):
            inner = (*functions, str(node.op))
            stack.append((node.expr, inner))
            if node.param is not None:
                stack.append((node.param, inner))
        elif isinstance(node, promql_parser.BinaryExpr):
            stack.append((node.rhs, functions))
            stack.append((node.lhs, functions))
        elif isinstance(
            node, promql_parser.ParenExpr | promql_parser.UnaryExpr | promql_parser.SubqueryExpr
        ):
            stack.append((node.expr, functions))
        # NumberLiteral, StringLiteral: no selectors.


def _op(match_op: promql_parser.MatchOp) -> Literal["=", "!=", "=~", "!~"]:
    if match_op == promql_parser.MatchOp.Equal:
        return "="
    if match_op == promql_parser.MatchOp.NotEqual:
        return "!="
    if match_op == promql_parser.MatchOp.Re:
        return "=~"
    return "!~"


def selectors_of(
    node: promql_parser.VectorSelector,
    functions: tuple[str, ...],
    text: str,
    variables: Mapping[str, tuple[str, ...]],
    placeholders: Mapping[int, Reference],
) -> list[Selector]:
    groups: list[list[promql_parser.Matcher]] = [list(node.matchers.matchers)]
    if node.matchers.or_matchers:  # `foo{a="x" or b="y"}`: one selector per alternative
        groups = [list(group) for group in node.matchers.or_matchers]
    innermost_first = tuple(reversed(functions))
    result = []
    for group in groups:
        metric = node.name
        matchers: list[Matcher] = []
        if metric is not None and _has_placeholder(metric, placeholders):
            name_matcher = name_from_variables(metric, variables, placeholders)
            matchers.append(name_matcher)
            metric = name_matcher.value if name_matcher.op == "=" else None
        for raw in group:
            label = PLACEHOLDER_RE.sub(lambda m: _written(m, placeholders), raw.name)
            matchers.append(variable_matcher(label, _op(raw.op), raw.value, variables))
        if metric is None:
            for matcher in matchers:
                if matcher.label == "__name__" and matcher.op == "=" and not matcher.from_variable:
                    metric = matcher.value
                    break
        selector_text = text or _render(metric, matchers)
        result.append(
            Selector(
                metric=metric,
                matchers=tuple(matchers),
                functions=innermost_first,
                text=selector_text,
            )
        )
    return result


def _has_placeholder(name: str, placeholders: Mapping[int, Reference]) -> bool:
    return any(int(m.group(1)) in placeholders for m in PLACEHOLDER_RE.finditer(name))


def _written(match: re.Match[str], placeholders: Mapping[int, Reference]) -> str:
    reference = placeholders.get(int(match.group(1)))
    return match.group(0) if reference is None else reference.text


def _render(metric: str | None, matchers: Sequence[Matcher]) -> str:
    shown = [m for m in matchers if not (metric and m.label == "__name__" and m.value == metric)]
    inner = ",".join(f'{m.label}{m.op}"{_quote(m.value)}"' for m in shown)
    if metric and not shown:
        return metric
    return f"{metric or ''}{{{inner}}}"


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
