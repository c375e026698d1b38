"""A small lexer for what the parser does not give: template substitution before
parsing, where each selector is written, and where a rejected expression breaks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import promql_parser

from blindspots.promql.syntax import (
    AGGREGATIONS,
    BUILTIN_DURATIONS,
    BUILTIN_NUMBERS,
    CLOSERS,
    DEFAULT_DURATION,
    GROUPING,
    IDENT_CHARS,
    IDENT_START,
    KEYWORDS,
    NUMBER_NAMES,
    PLACEHOLDER,
    TWO_CHAR_OPS,
)

# --- the lexer: template substitution, selector spans, error positions -------------------


@dataclass(frozen=True)
class Reference:
    text: str  # as written: `$model`, `${model:regex}`, `[[model]]`
    name: str
    fmt: str | None


@dataclass
class Token:
    kind: Literal["name", "number", "string", "punct"]
    start: int  # offsets in the original expression
    end: int
    text: str
    references: list[tuple[int, int, Reference]] = field(default_factory=list)  # in-token
    unterminated: bool = False


@dataclass
class Prepared:
    text: str
    tokens: list[Token]
    substituted_ends: list[int]  # per token: where it ends in `text`
    selector_spans: list[tuple[int, int]]
    placeholders: dict[int, Reference]
    unclosed: Token | None


def _variable_at(expr: str, i: int) -> tuple[int, Reference] | None:
    """A template variable starting at `i`: its end and what it names."""
    n = len(expr)
    if expr.startswith("$", i) and i + 1 < n:
        if expr[i + 1] == "{":
            close = expr.find("}", i + 2)
            if close == -1:
                return None
            body = expr[i + 2 : close]
            name, _, fmt = body.partition(":")
            if not name or not all(c.isalnum() or c == "_" for c in name):
                return None
            return close + 1, Reference(expr[i : close + 1], name, fmt or None)
        j = i + 1
        while j < n and (expr[j].isalnum() or expr[j] == "_"):
            j += 1
        if j > i + 1:
            return j, Reference(expr[i:j], expr[i + 1 : j], None)
    if expr.startswith("[[", i):
        close = expr.find("]]", i + 2)
        if close == -1:
            return None
        name, _, fmt = expr[i + 2 : close].partition(":")
        if name and all(c.isalnum() or c == "_" for c in name):
            return close + 2, Reference(expr[i : close + 2], name, fmt or None)
    return None


def tokenize(expr: str) -> list[Token]:
    tokens: list[Token] = []
    n = len(expr)
    i = 0
    while i < n:
        c = expr[i]
        if c.isspace():
            i += 1
        elif c == "#":
            newline = expr.find("\n", i)
            i = n if newline == -1 else newline + 1
        elif c in "\"'`":
            j = i + 1
            while j < n and expr[j] != c:
                j += 2 if expr[j] == "\\" and c != "`" else 1
            tokens.append(Token("string", i, min(j + 1, n), expr[i : j + 1], unterminated=j >= n))
            i = min(j + 1, n)
        elif c in IDENT_START or _variable_at(expr, i) is not None:
            j = i
            references: list[tuple[int, int, Reference]] = []
            while j < n:
                variable = _variable_at(expr, j)
                if variable is not None:
                    references.append((j - i, variable[0] - i, variable[1]))
                    j = variable[0]
                elif expr[j] in IDENT_CHARS:
                    j += 1
                else:
                    break
            tokens.append(Token("name", i, j, expr[i:j], references))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and expr[i + 1].isdigit()):
            j = i + 1
            while j < n and (expr[j].isalnum() or expr[j] in "._"):
                if expr[j] in "eE" and j + 1 < n and expr[j + 1] in "+-":
                    j += 1
                j += 1
            tokens.append(Token("number", i, j, expr[i:j]))
            i = j
        else:
            width = 2 if expr[i : i + 2] in TWO_CHAR_OPS else 1
            tokens.append(Token("punct", i, i + width, expr[i : i + width]))
            i += width
    return tokens


def _duration_of(reference: Reference, variables: Mapping[str, tuple[str, ...]]) -> str:
    for value in variables.get(reference.name, ()):
        try:
            promql_parser.parse_duration(value)
        except (ValueError, OverflowError):
            continue
        return value
    return DEFAULT_DURATION


def prepare(expr: str, variables: Mapping[str, tuple[str, ...]]) -> Prepared:
    tokens = tokenize(expr)
    pieces: list[str] = []
    ends: list[int] = []
    spans: list[tuple[int, int]] = []
    placeholders: dict[int, Reference] = {}
    stack: list[tuple[int, str]] = []  # open bracket's token index and its context
    length = 0
    previous_end = 0
    brace_owner: dict[int, int] = {}  # index of a `{` token -> start of its selector span
    for index, token in enumerate(tokens):
        context = stack[-1][1] if stack else "expr"
        previous = tokens[index - 1] if index else None
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        text = token.text
        if token.kind == "name" and token.references:
            duration = context == "range" or (previous is not None and previous.text == "offset")
            text = _substitute_name(token, context, duration, variables, placeholders)
        if (
            token.kind == "name"
            and context == "expr"
            and _is_selector_name(token, previous, following)
        ):
            if following is not None and following.text == "{":
                brace_owner[index + 1] = token.start
            else:
                spans.append((token.start, token.end))
        if token.kind == "punct":
            if token.text in CLOSERS:
                if token.text == "{":
                    inner = "labels"
                    if index not in brace_owner and context == "expr":
                        brace_owner[index] = token.start
                elif token.text == "[":
                    inner = "range"
                elif previous is not None and previous.text.lower() in GROUPING:
                    inner = "grouping"
                else:
                    inner = "expr"
                stack.append((index, inner))
            elif token.text in (")", "}", "]") and stack:
                opener_index, _ = stack[-1]
                if CLOSERS[tokens[opener_index].text] == token.text:
                    stack.pop()
                    if token.text == "}" and opener_index in brace_owner:
                        spans.append((brace_owner[opener_index], token.end))
        gap = expr[previous_end : token.start]
        pieces.append(gap)
        pieces.append(text)
        length += len(gap) + len(text)
        ends.append(length)
        previous_end = token.end
    pieces.append(expr[previous_end:])
    unclosed = next((tokens[i] for i, _ in reversed(stack) if tokens[i].text == "("), None)
    spans.sort()
    return Prepared("".join(pieces), tokens, ends, spans, placeholders, unclosed)


def _is_selector_name(token: Token, previous: Token | None, following: Token | None) -> bool:
    lowered = token.text.lower()
    if lowered in KEYWORDS or lowered in NUMBER_NAMES:
        return False
    if following is not None and following.text == "(":
        return False  # a function or an aggregation
    if (
        following is not None
        and lowered in AGGREGATIONS
        and following.text.lower()
        in (
            "by",
            "without",
        )
    ):
        return False
    return not (previous is not None and previous.text == "@")


def _substitute_name(
    token: Token,
    context: str,
    duration: bool,
    variables: Mapping[str, tuple[str, ...]],
    placeholders: dict[int, Reference],
) -> str:
    whole = len(token.references) == 1 and token.references[0][:2] == (0, len(token.text))
    pieces = []
    position = 0
    for start, end, reference in token.references:
        pieces.append(token.text[position:start])
        position = end
        name = reference.name
        if duration:
            pieces.append(
                DEFAULT_DURATION
                if name in BUILTIN_DURATIONS or name.startswith("__")
                else _duration_of(reference, variables)
            )
            continue
        if name in BUILTIN_NUMBERS:
            pieces.append(BUILTIN_NUMBERS[name])
            continue
        if name in BUILTIN_DURATIONS:
            pieces.append(DEFAULT_DURATION)
            continue
        values = variables.get(name, ())
        if context in ("labels", "grouping"):
            first = values[0] if values else ""
            if first and first[0] in IDENT_START and all(c in IDENT_CHARS for c in first):
                pieces.append(first)
            else:
                placeholders[len(placeholders)] = reference
                pieces.append(PLACEHOLDER.format(len(placeholders) - 1))
            continue
        if whole and values and all(is_number(v) for v in values):
            pieces.append(values[0])
            continue
        placeholders[len(placeholders)] = reference
        pieces.append(PLACEHOLDER.format(len(placeholders) - 1))
    pieces.append(token.text[position:])
    return "".join(pieces)


def is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True
