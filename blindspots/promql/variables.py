"""Template variables in label values and metric names, replaced by their values (a
regex alternation for several, a wildcard for All or unknown)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from blindspots.promql.lexer import Reference
from blindspots.promql.syntax import (
    ALL_VALUES,
    BUILTIN_DURATIONS,
    BUILTIN_NUMBERS,
    DEFAULT_DURATION,
    PLACEHOLDER_RE,
    REGEX_SPECIAL,
    VARIABLE_RE,
    WILDCARD,
)
from blindspots.types import Matcher

# --- variables in label values and metric names --------------------------------------------


def _regex_escape(value: str) -> str:
    return "".join(f"\\{c}" if c in REGEX_SPECIAL else c for c in value)


def _expansion(
    name: str, fmt: str | None, variables: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...] | None:
    """The variable's values; None means any value (unknown, All, no values)."""
    if name in BUILTIN_DURATIONS or name.startswith("__auto_interval"):
        return (DEFAULT_DURATION,)
    if name in BUILTIN_NUMBERS:
        return (BUILTIN_NUMBERS[name],)
    values = variables.get(name)
    if not values or any(value in ALL_VALUES for value in values):
        return None
    return tuple(dict.fromkeys(values))


def _expand(
    value: str,
    op: Literal["=", "!=", "=~", "!~"],
    variables: Mapping[str, tuple[str, ...]],
    references: Sequence[tuple[int, int, str, str | None]],
) -> tuple[Literal["=", "!=", "=~", "!~"], str]:
    """`value` with each variable reference (start, end, name, format) replaced."""
    parts: list[tuple[str, tuple[str, ...] | None, str | None]] = []  # literal or variable
    position = 0
    for start, end, name, fmt in references:
        if start > position:
            parts.append((value[position:start], (value[position:start],), "literal"))
        parts.append(("", _expansion(name, fmt, variables), fmt))
        position = end
    if position < len(value):
        parts.append((value[position:], (value[position:],), "literal"))
    regex = op in ("=~", "!~") or any(
        values is None or len(values) > 1 for _, values, kind in parts if kind != "literal"
    )
    if not regex:
        return op, "".join(values[0] for _, values, _ in parts if values)
    new_op: Literal["=", "!=", "=~", "!~"] = "!~" if op in ("!=", "!~") else "=~"
    originally_regex = op in ("=~", "!~")
    pieces = []
    for literal, values, kind in parts:
        if kind == "literal":
            pieces.append(literal if originally_regex else _regex_escape(literal))
        elif values is None:
            pieces.append(WILDCARD)
        elif len(values) == 1:
            single = values[0]
            pieces.append(
                _regex_escape(single) if kind == "regex" or not originally_regex else single
            )
        elif kind == "pipe":
            pieces.append("|".join(values))
        else:
            pieces.append("(" + "|".join(_regex_escape(v) for v in values) + ")")
    return new_op, "".join(pieces)


def _references(value: str) -> list[tuple[int, int, str, str | None]]:
    found = []
    for match in VARIABLE_RE.finditer(value):
        name = match.group("braced") or match.group("plain") or match.group("old")
        fmt = match.group("fmt") or match.group("oldfmt")
        found.append((match.start(), match.end(), name, fmt))
    return found


def variable_matcher(
    label: str,
    op: Literal["=", "!=", "=~", "!~"],
    value: str,
    variables: Mapping[str, tuple[str, ...]],
) -> Matcher:
    references = _references(value)
    if not references:
        return Matcher(label=label, op=op, value=value)
    new_op, new_value = _expand(value, op, variables, references)
    return Matcher(label=label, op=new_op, value=new_value, from_variable=True)


def name_from_variables(
    metric: str, variables: Mapping[str, tuple[str, ...]], placeholders: Mapping[int, Reference]
) -> Matcher:
    references = []
    text = []
    position = 0
    for match in PLACEHOLDER_RE.finditer(metric):
        reference = placeholders.get(int(match.group(1)))
        if reference is None:  # written so in the expression: not ours
            continue
        text.append(metric[position : match.start()])
        start = sum(len(piece) for piece in text)
        text.append(reference.text)
        references.append((start, start + len(reference.text), reference.name, reference.fmt))
        position = match.end()
    text.append(metric[position:])
    op, value = _expand("".join(text), "=", variables, references)
    return Matcher(label="__name__", op=op, value=value, from_variable=True)
