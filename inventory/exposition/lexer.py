"""The lexical layer of the exposition parser: names, label sets, numbers, HELP text.

Everything here either returns a validated value or raises ExpositionError
with a specific message. The compiled regexes accept exactly the grammar we
support; when one of them rejects a line, `diagnose_sample` walks the line by
hand to say *what* is wrong, so the fast path never pays for good messages.
"""

from __future__ import annotations

import re
import sys
from typing import NoReturn

from inventory.exposition.model import (
    EMPTY_LABELS,
    NUMBER_CHARS,
    OM_SPECIALS,
    TEXT_SPECIALS,
    LabelCache,
    Labels,
    excerpt,
    fail,
)

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
# Escapes are exactly \\ \" \n; NUL never appears (rejected payload-wide first).
# Possessive quantifiers: a long value is matched in one sweep, with no backtracking.
LABEL_VALUE = r'"(?:[^"\\\x00]++|\\[\\"n])*+"'
_PAIR = f"{LABEL_NAME}={LABEL_VALUE}"
TEXT_LABELS = rf"\{{(?:{_PAIR}(?:,{_PAIR})*,?)?\}}"
OM_LABELS = rf"\{{(?:{_PAIR}(?:,{_PAIR})*)?\}}"

metric_name_match = re.compile(METRIC_NAME).fullmatch
_metric_name_prefix = re.compile(METRIC_NAME).match
_label_name_prefix = re.compile(LABEL_NAME).match
text_labels_match = re.compile(TEXT_LABELS).fullmatch
om_labels_match = re.compile(OM_LABELS).fullmatch
_pairs = re.compile(rf'({LABEL_NAME})="((?:[^"\\\x00]++|\\[\\"n])*+)"').findall
_text_sample_match = re.compile(rf"({METRIC_NAME})({TEXT_LABELS})? ([^ ]+)(?: ([^ ]+))?").fullmatch
om_prefix_match = re.compile(rf"({METRIC_NAME})({OM_LABELS})?").match
_decimal_match = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?").fullmatch
_integer_match = re.compile(r"[+-]?[0-9]{1,19}").fullmatch
_escape = re.compile(r"\\(.?)", re.DOTALL)
_quoted_stop = re.compile(r'["\\\x00]').search

_INF = float("inf")
_LABEL_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_INT64 = 2**63


def check_metric_name(name: str, lineno: int) -> str:
    if metric_name_match(name) is None:
        fail(lineno, f"invalid metric name {excerpt(name)}")
    return sys.intern(name)


def parse_value(token: str, lineno: int, *, om: bool = False) -> float:
    """A sample value: a decimal number or one of the spellings Prometheus documents.

    float() is the fast judge, but it also takes `1_000`, `infinity`, a leading
    tab and non-ASCII digits. A finite result is only a decimal number if the
    token is printable ASCII without underscores or spaces (float() accepts no
    other characters in a finite number); a non-finite one must be a listed
    spelling.
    """
    try:
        value = float(token)
    except ValueError:
        value = None
    if value is not None:
        if value - value == 0:
            # Python whitespace in ASCII is all unprintable, except the space that
            # cannot occur here: the line was split at spaces.
            if token.isascii() and token.isprintable() and "_" not in token and " " not in token:
                return value
        else:
            special = OM_SPECIALS.get(token.lower()) if om else TEXT_SPECIALS.get(token)
            if special is not None:
                return special
            if not token.strip(NUMBER_CHARS):
                fail(lineno, f"value {excerpt(token)} is out of range for a 64-bit float")
    expected = "a number, NaN or ±Inf" if om else "a decimal number, NaN, +Inf or -Inf"
    fail(lineno, f"invalid value {excerpt(token)}: expected {expected}")


def plausible_numbers(joined: str) -> bool:
    """Whether the value tokens that float() accepted, joined, are all Prometheus numbers.

    float() also takes `1_000`, non-ASCII digits and edge whitespace; one check
    over all tokens at once is far cheaper than one per token.
    """
    return joined.isascii() and joined.isprintable() and "_" not in joined


def parse_text_timestamp(token: str, lineno: int) -> float:
    """Text-format timestamps are integer milliseconds; we return seconds."""
    if _integer_match(token) is None:
        fail(lineno, f"invalid timestamp {excerpt(token)}: expected integer milliseconds")
    millis = int(token)
    if not -_INT64 <= millis < _INT64:
        fail(lineno, f"timestamp {excerpt(token)} is out of range")
    return millis / 1000


def parse_om_timestamp(token: str, lineno: int) -> float:
    """OpenMetrics timestamps are seconds, possibly fractional or in exponent form."""
    if _decimal_match(token) is None:
        fail(lineno, f"invalid timestamp {excerpt(token)}: expected seconds as a number")
    value = float(token)
    if value == _INF or value == -_INF:
        fail(lineno, f"timestamp {excerpt(token)} is out of range")
    return value


def _unescape_label_value(raw: str) -> str:
    return _escape.sub(lambda m: _LABEL_ESCAPES[m.group(1)], raw)


def parse_label_text(text: str, lineno: int, *, om: bool) -> Labels:
    """Parse and validate a whole `{...}` group; the result is interned and read-only."""
    matcher = om_labels_match if om else text_labels_match
    if matcher(text) is None:
        diagnose_labels(text, 0, lineno, om=om)
    pairs = _pairs(text)
    intern = sys.intern
    labels = {}
    for name, raw in pairs:
        if name.startswith("__"):
            fail(lineno, f"label name {excerpt(name)} is reserved (names starting __)")
        if name in labels:
            fail(lineno, f"duplicate label name {excerpt(name)}")
        labels[intern(name)] = intern(_unescape_label_value(raw) if "\\" in raw else raw)
    return Labels(labels) if labels else EMPTY_LABELS


def labels_for(text: str, lineno: int, cache: LabelCache, *, om: bool) -> Labels:
    labels = cache.labels.get(text)
    if labels is None:
        labels = parse_label_text(text, lineno, om=om)
        cache.labels.put(text, labels)
    return labels


def parse_text_sample(
    line: str, lineno: int, cache: LabelCache
) -> tuple[str, Labels, float, float | None]:
    """A sample line whose series is not cached yet; caches the series on success.

    The usual `name{labels} value` is split by hand, so a label set already seen
    on another series (every family repeats an engine's labels) needs no regex.
    Timestamps and malformed lines take the full-line regex.
    """
    head, _, token = line.rpartition(" ")
    brace = head.find("{")
    if brace < 0:
        name, label_text = head, ""
    elif head[-1] == "}":
        name, label_text = head[:brace], head[brace:]
    else:
        name = label_text = ""
    if name and (name := _known_names.get(name) or _new_name(name)):
        labels = labels_for(label_text, lineno, cache, om=False) if label_text else EMPTY_LABELS
        value = parse_value(token, lineno)
        cache.series.put(head, (name, labels))
        return name, labels, value, None
    return _parse_text_sample_slowly(line, lineno, cache)


_known_names: dict[str, str] = {}


def _new_name(name: str) -> str:
    """The interned name if it is a valid metric name, else the empty string."""
    if metric_name_match(name) is None:
        return ""
    if len(_known_names) >= 100_000:
        _known_names.clear()
    name = _known_names[name] = sys.intern(name)
    return name


def _parse_text_sample_slowly(
    line: str, lineno: int, cache: LabelCache
) -> tuple[str, Labels, float, float | None]:
    m = _text_sample_match(line)
    if m is None:
        diagnose_sample(line, lineno, om=False)
    name, label_text, value_token, ts_token = m.groups()
    name = sys.intern(name)
    labels = labels_for(label_text, lineno, cache, om=False) if label_text else EMPTY_LABELS
    value = parse_value(value_token, lineno)
    if ts_token is None:
        cache.series.put(line[: m.start(3) - 1], (name, labels))
        return name, labels, value, None
    return name, labels, value, parse_text_timestamp(ts_token, lineno)


def unescape_help(text: str, lineno: int, *, om: bool) -> str:
    """HELP escapes: `\\\\` and `\\n` in the text format, plus `\\"` in OpenMetrics."""

    def replace(m: re.Match[str]) -> str:
        char = m.group(1)
        if char == "\\" or char == "n" or (om and char == '"'):
            return _LABEL_ESCAPES[char]
        fail(lineno, f"invalid escape {excerpt(m.group(0))} in HELP text")

    return _escape.sub(replace, text) if "\\" in text else text


def diagnose_sample(line: str, lineno: int, *, om: bool) -> NoReturn:
    """Explain why a sample line does not parse; always raises."""
    if line[0] in " \t":
        fail(lineno, "line starts with whitespace")
    m = _metric_name_prefix(line)
    if m is None:
        if line[0] == "{":
            fail(lineno, "sample has no metric name (the quoted-name syntax is not supported)")
        fail(lineno, f"invalid metric name at the start of {excerpt(line)}")
    i = m.end()
    if i < len(line) and line[i] == "{":
        i = diagnose_labels(line, i, lineno, om=om, complete=True)
    if i >= len(line):
        fail(lineno, f"sample {excerpt(line[:i])} has no value")
    if line[i] != " ":
        if line[i] == "\t":
            fail(lineno, "expected a single space before the value, found a tab")
        fail(lineno, f"invalid character {excerpt(line[i])} after the metric name")
    rest = line[i + 1 :]
    if om:
        # The OpenMetrics caller validates the value/timestamp/exemplar part itself.
        fail(lineno, f"malformed sample {excerpt(line)}")
    tokens = rest.split(" ")
    if "" in tokens:
        where = "trailing whitespace" if tokens[-1] == "" else "more than one space between fields"
        fail(lineno, f"{where} in {excerpt(line)}")
    if len(tokens) > 2:
        fail(lineno, f"unexpected text after the timestamp in {excerpt(line)}")
    parse_value(tokens[0], lineno)
    if len(tokens) == 2:
        parse_text_timestamp(tokens[1], lineno)
    fail(lineno, f"malformed sample {excerpt(line)}")  # pragma: no cover - regex/diagnosis drift


def diagnose_labels(text: str, start: int, lineno: int, *, om: bool, complete: bool = False) -> int:
    """Walk a `{...}` group starting at `text[start]`; return the index after `}`.

    Raises on the first problem. With complete=False the group must be all of
    `text`, so reaching the end cleanly still means something is wrong.
    """
    n = len(text)
    i = start + 1
    seen: set[str] = set()
    after_comma = False
    while True:
        if i >= n:
            fail(lineno, "unterminated label set (missing '}')")
        c = text[i]
        if c == "}":
            if om and after_comma:
                fail(lineno, "trailing comma in label set (not allowed in OpenMetrics)")
            i += 1
            break
        m = _label_name_prefix(text, i)
        if m is None:
            if c in " \t":
                fail(lineno, "whitespace inside the label set")
            if c == ",":
                fail(lineno, "empty label: leading or repeated comma in label set")
            if c == "=":
                fail(lineno, "empty label name")
            if c == '"':
                fail(lineno, "quoted label names are not supported")
            fail(lineno, f"invalid label name at {excerpt(text[i:])}")
        name = m.group()
        i = m.end()
        if i >= n:
            fail(lineno, "unterminated label set (missing '}')")
        if text[i] != "=":
            if text[i] in " \t":
                fail(lineno, "whitespace inside the label set")
            fail(lineno, f"expected '=' after label name {excerpt(name)}")
        i += 1
        if i >= n or text[i] != '"':
            if i < n and text[i] in ",}":
                fail(lineno, f"empty unquoted value for label {excerpt(name)}")
            fail(lineno, f"value of label {excerpt(name)} must be a quoted string")
        i = _skip_quoted(text, i + 1, lineno, name)
        if name.startswith("__"):
            fail(lineno, f"label name {excerpt(name)} is reserved (names starting __)")
        if name in seen:
            fail(lineno, f"duplicate label name {excerpt(name)}")
        seen.add(name)
        if i >= n:
            fail(lineno, "unterminated label set (missing '}')")
        if text[i] == ",":
            i += 1
            after_comma = True
            continue
        if text[i] != "}":
            fail(lineno, f"expected ',' or '}}' after the value of label {excerpt(name)}")
    if not complete and i != n:
        fail(lineno, f"unexpected text after the label set: {excerpt(text[i:])}")
    if not complete:
        fail(lineno, f"malformed label set {excerpt(text)}")  # pragma: no cover - drift guard
    return i


def _skip_quoted(text: str, i: int, lineno: int, name: str) -> int:
    """Return the index after the closing quote of a label value that starts at i."""
    while True:
        m = _quoted_stop(text, i)  # jump straight to the next character that matters
        if m is None:
            fail(lineno, f"unterminated quoted value for label {excerpt(name)}")
        i = m.start()
        c = text[i]
        if c == '"':
            return i + 1
        if c == "\x00":
            fail(lineno, f"NUL character in the value of label {excerpt(name)}")
        nxt = text[i + 1 : i + 2]
        if nxt not in _LABEL_ESCAPES:
            escape = excerpt(c + nxt)
            fail(lineno, f"invalid escape {escape} in the value of label {excerpt(name)}")
        i += 2
