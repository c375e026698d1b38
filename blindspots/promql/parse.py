"""Parse an expression with `promql_parser` and return its vector selectors."""

from __future__ import annotations

from collections.abc import Mapping

import promql_parser

from blindspots.promql.errors import located_error
from blindspots.promql.lexer import prepare
from blindspots.promql.syntax import NO_VARIABLES
from blindspots.promql.walk import selectors_of, vector_selectors
from blindspots.types import Selector


def parse_selectors(
    expr: str, variables: Mapping[str, tuple[str, ...]] = NO_VARIABLES
) -> tuple[Selector, ...]:
    """Every vector selector of `expr`, in the order written, with its matchers and the
    functions and aggregations wrapping it (innermost first). Raises `PromqlError`."""
    prepared = prepare(expr, variables)
    try:
        tree = promql_parser.parse(prepared.text)
    except ValueError as exc:  # how promql_parser reports every expression it rejects
        raise located_error(str(exc), expr, prepared) from None
    found = list(vector_selectors(tree))
    spans = prepared.selector_spans
    selectors: list[Selector] = []
    for index, (node, functions) in enumerate(found):
        text = ""
        if len(spans) == len(found):
            start, end = spans[index]
            text = expr[start:end]
        selectors.extend(selectors_of(node, functions, text, variables, prepared.placeholders))
    return tuple(selectors)


def substitute_variables(expr: str, variables: Mapping[str, tuple[str, ...]] = NO_VARIABLES) -> str:
    """The text handed to the parser: template variables outside strings substituted
    (metric-name variables become `__fsvarN__` placeholders)."""
    return prepare(expr, variables).text
