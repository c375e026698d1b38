"""An expression the parser rejects, with the line and column to blame."""

from __future__ import annotations

import re
from collections.abc import Sequence

import promql_parser

from blindspots.promql.lexer import Prepared, Token, tokenize
from blindspots.promql.syntax import CLOSERS, COMPLETIONS, MAX_LOCATE_TOKENS


class PromqlError(ValueError):
    """The expression does not parse. `reason` is the parser's message with the line and
    column blamed (1-based, in the expression as written)."""

    def __init__(self, reason: str, *, message: str = "", line: int = 0, column: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.message = message or reason
        self.line = line
        self.column = column


def _parses(text: str) -> bool:
    try:
        promql_parser.parse(text)
    except ValueError:  # how promql_parser rejects an expression
        return False
    return True


def _closers(tokens: Sequence[Token]) -> str:
    stack: list[str] = []
    for token in tokens:
        if token.kind != "punct":
            continue
        if token.text in CLOSERS:
            stack.append(CLOSERS[token.text])
        elif stack and token.text == stack[-1]:
            stack.pop()
    return "".join(reversed(stack))


def _blame(message: str, prepared: Prepared) -> tuple[Token | None, bool]:
    """The token the parser's message is about, and whether it is the end of input."""
    tokens = prepared.tokens
    if "unterminated" in message:
        token = next((t for t in tokens if t.unterminated), None)
        if token is not None:
            return token, False
    if "unclosed left parenthesis" in message and prepared.unclosed is not None:
        return prepared.unclosed, False
    quoted = re.search(r"'([A-Za-z_:][\w:]*)'", message)
    if quoted:
        token = next((t for t in tokens if t.kind == "name" and t.text == quoted.group(1)), None)
        if token is not None:
            return token, False
    if len(tokens) > MAX_LOCATE_TOKENS:
        return None, False
    # The first token after which the expression can no longer be completed.
    for index, token in enumerate(tokens):
        prefix = prepared.text[: prepared.substituted_ends[index]]
        viable = False
        for completion in COMPLETIONS:
            candidate = prefix + completion
            closers = _closers([*tokens[: index + 1], *tokenize(completion)])
            # A range may be what the function around a closed selector needs.
            ranged = closers.replace("}", "}[5m]", 1)
            if _parses(candidate + closers) or (ranged != closers and _parses(candidate + ranged)):
                viable = True
                break
        if not viable:
            return token, False
    return None, True


def located_error(message: str, expr: str, prepared: Prepared) -> PromqlError:
    if not expr.strip():
        return PromqlError("empty expression", message=message)
    token, at_end = _blame(message, prepared)
    if token is None and not at_end:
        return PromqlError(message, message=message)
    offset = len(expr.rstrip()) if token is None else token.start
    line = expr.count("\n", 0, offset) + 1
    column = offset - (expr.rfind("\n", 0, offset) + 1) + 1
    near = "at end of input" if token is None else f"near {token.text[:40]!r}"
    return PromqlError(
        f"{message} at line {line}, column {column} ({near})",
        message=message,
        line=line,
        column=column,
    )
