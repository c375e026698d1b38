"""The rewrite a verdict suggests, as text for a human (never applied anywhere): a renamed
metric in its dialect-proof form, an `le` matcher that accepts every spelling of its
value. The result is parsed again with `promql_parser`; a rewrite that does not parse is
not offered (the notes say why).

Selectors are found in the text with a small scanner that skips string literals,
comments, label braces and grouping clauses, so everything around them stays as written
and the diff shows only what changed."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import promql_parser

from blindspots.types import SelectorVerdict

__all__ = ["Rewrite", "le_spellings", "rewrite_expression"]

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_MODIFIER = re.compile(r"\s*(?:offset\s+-?[0-9a-zA-Z.]+|@\s*(?:start\(\)|end\(\)|[0-9.]+))")
_LE = re.compile(r'(\ble\s*)=(\s*)"([^"\\]*)"')


@dataclass(frozen=True)
class Rewrite:
    before: str
    after: str
    diff: str  # unified diff, before -> after
    notes: tuple[str, ...]


@dataclass(frozen=True)
class _Span:
    start: int
    end: int  # the selector with its braces, range and modifiers
    ranged: bool


def _skip_string(text: str, i: int) -> int:
    quote = text[i]
    i += 1
    while i < len(text) and text[i] != quote:
        i += 2 if text[i] == "\\" and quote != "`" else 1
    return i + 1


def _close(text: str, i: int, opening: str, closing: str) -> int:
    """The index after the bracket matching the one at i."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            i = _skip_string(text, i)
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _selectors(text: str, name: str) -> list[_Span]:
    """Where the vector selectors of metric `name` are written in `text`."""
    spans = []
    i = 0
    previous = ""
    while i < len(text):
        c = text[i]
        if c in "\"'`":
            i = _skip_string(text, i)
            continue
        if c == "#":
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        if c == "{":
            i = _close(text, i, "{", "}")
            continue
        if c == "(" and previous in _GROUPING:
            i = _close(text, i, "(", ")")
            previous = ""
            continue
        found = _IDENT.match(text, i)
        if found is None or (i and (text[i - 1].isalnum() or text[i - 1] in "_:.")):
            i += 1 if found is None else found.end() - i
            if not c.isspace():
                previous = ""
            continue
        word, end = found.group(), found.end()
        previous = word
        after = end
        while after < len(text) and text[after].isspace():
            after += 1
        if word != name or (after < len(text) and text[after] == "("):
            i = end
            continue
        if after < len(text) and text[after] == "{":
            end = _close(text, after, "{", "}")
        ranged = False
        probe = end
        while probe < len(text) and text[probe].isspace():
            probe += 1
        if probe < len(text) and text[probe] == "[":
            close = _close(text, probe, "[", "]")
            if ":" not in text[probe:close]:  # a range, not a subquery
                end, ranged = close, True
        while (modifier := _MODIFIER.match(text, end)) is not None and modifier.group().strip():
            end = modifier.end()
        spans.append(_Span(i, end, ranged))
        i = end
    return spans


def _enclosing_call(text: str, span: _Span) -> tuple[int, int] | None:
    """The function call whose argument list holds `span` (`rate(x[5m])`): its start and
    end, or None when the range selector is not directly a call's argument."""
    depth = 0
    i = span.start - 1
    while i >= 0:
        c = text[i]
        if c == ")":
            depth += 1
        elif c == "(":
            if depth == 0:
                break
            depth -= 1
        i -= 1
    if i < 0:
        return None
    head = i
    while head > 0 and text[head - 1].isspace():
        head -= 1
    function = re.search(r"[a-zA-Z_][a-zA-Z0-9_]*$", text[:head])
    if function is None or function.group() in _GROUPING:
        return None
    end = _close(text, i, "(", ")")
    return function.start(), end


def le_spellings(value: str) -> tuple[str, ...]:
    """The spellings exporters give one bucket bound: Go's "2" and Python's "2.0"."""
    try:
        number = float(value)
    except ValueError:
        return (value,)
    if math.isinf(number):
        return ("+Inf",) if number > 0 else ("-Inf",)
    spelled = [value, repr(number)]
    go = f"{number:g}" if number == int(number) and abs(number) < 1e15 else repr(number)
    spelled.append(go if "e" not in go else str(int(number)))
    return tuple(dict.fromkeys(spelled))


def _le_regex(value: str) -> str:
    alternatives = "|".join(re.escape(s) for s in le_spellings(value))
    return alternatives.replace("\\", "\\\\")  # a PromQL double-quoted string


def _parses(text: str) -> str | None:
    try:
        promql_parser.parse(text)
    except ValueError as exc:  # how promql_parser rejects an expression
        return str(exc) or "the parser rejected it"
    return None


def rewrite_expression(expr: str, verdicts: Sequence[SelectorVerdict]) -> Rewrite | None:
    """The expression rewritten for these verdicts' renames and `le` spellings, or None
    when nothing in it needs rewriting. Renamed selectors become `(new{...} or old{...})`;
    one inside a range function becomes `(f(new[5m]) or f(old[5m]))` (the whole call, so
    the `or` joins instant vectors), or the current name only where no call encloses it."""
    after = expr
    notes: list[str] = []
    for verdict in verdicts:
        selector = verdict.selector
        old, new = selector.metric, verdict.replacement
        if not old or not new or new == old or " " in new:
            continue
        spans = _selectors(after, old)
        if not spans:
            notes.append(f"{old}: not found as written in the expression; left as it is")
            continue
        for span in reversed(spans):
            written = after[span.start : span.end]
            renamed = new + written[len(old) :]
            if not span.ranged:
                after = f"{after[: span.start]}({renamed} or {written}){after[span.end :]}"
                continue
            call = _enclosing_call(after, span)
            if call is None:
                after = after[: span.start] + renamed + after[span.end :]
                notes.append(
                    f"{old}: a range selector outside a function call: renamed to {new} only "
                    "(replicas still on the old name go blind with it)"
                )
                continue
            start, end = call
            whole = after[start:end]
            inner = span.start - start
            new_call = whole[:inner] + renamed + whole[inner + span.end - span.start :]
            after = f"{after[:start]}({new_call} or {whole}){after[end:]}"
        notes.append(f"{old}: the current name {new} first, the old one after `or`")
    le_values = {
        m.value
        for v in verdicts
        for m in v.selector.matchers
        if m.label == "le" and m.op == "=" and len(le_spellings(m.value)) > 1
    }
    if le_values:

        def accept_both(found: re.Match[str]) -> str:
            value = found.group(3)
            if value not in le_values:
                return found.group()
            return f'{found.group(1)}=~{found.group(2)}"{_le_regex(value)}"'

        after = _LE.sub(accept_both, after)
        for value in sorted(le_values):
            spelled = " or ".join(f'"{s}"' for s in le_spellings(value))
            notes.append(f'le="{value}": a regex that accepts {spelled}')
    if after == expr:
        return None
    problem = _parses(after)
    if problem is not None:
        return Rewrite(expr, expr, "", (*notes, f"the rewrite does not parse ({problem}): none"))
    diff = "".join(
        difflib.unified_diff(
            (expr + "\n").splitlines(keepends=True),
            (after + "\n").splitlines(keepends=True),
            fromfile="before",
            tofile="after",
        )
    )
    return Rewrite(expr, after, diff, tuple(notes))
