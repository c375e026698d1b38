"""One OpenMetrics line read by the ABNF: label sets, numbers, timestamps, exemplars and
the metadata line's pattern. Every malformed spelling raises `ExpositionError` naming what
the specification wants instead."""

from __future__ import annotations

import re
import sys
from typing import NoReturn

from inventory.exposition.lexer import LABEL_NAME, METRIC_NAME
from inventory.exposition.model import EMPTY_LABELS, Labels, Sample, excerpt, fail, go_float

metadata_match = re.compile(rf"# (HELP|TYPE|UNIT) ({METRIC_NAME}) (.*)", re.DOTALL).fullmatch
unit_match = re.compile(r"[a-zA-Z0-9_:]*").fullmatch
_metric_name_at = re.compile(METRIC_NAME).match
_label_name_at = re.compile(LABEL_NAME).match
_realnumber_match = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
).fullmatch
_quoted_stop = re.compile(r'["\\]').search
_integer_match = re.compile(r"[+-]?[0-9]+").fullmatch
_digits_match = re.compile(r"[0-9]*").fullmatch
_om_escape = re.compile(r"\\(.?)", re.DOTALL)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_EXEMPLAR_MAX_CHARS = 128
_INF = float("inf")


def unescape(raw: str) -> str:
    """An escaped-string: `\\\\`, `\\"` and `\\n` are escapes, `\\` + anything else stays."""
    return _om_escape.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), raw)


def _labels(line: str, k: int, lineno: int) -> tuple[Labels, int]:
    """The label set starting at line[k] == '{'; the index after its '}'."""
    n = len(line)
    labels: dict[str, str] = {}
    k += 1
    if line[k : k + 1] == "}":
        return EMPTY_LABELS, k + 1
    while True:
        m = _label_name_at(line, k)
        if m is None:
            _bad_label_start(line, k, lineno)
        name = m.group()
        k = m.end()
        if line[k : k + 2] != '="':
            if line[k : k + 1] == "=" and line[k + 1 : k + 2] in (",", "}", ""):
                fail(lineno, f"empty unquoted value for label {excerpt(name)}")
            if line[k : k + 1] in (" ", "\t"):
                fail(lineno, "whitespace inside the label set (not allowed in OpenMetrics)")
            fail(lineno, f"expected '=\"' after label name {excerpt(name)}")
        start = k = k + 2
        while True:
            stop = _quoted_stop(line, k)
            if stop is None:
                fail(lineno, f"unterminated quoted value for label {excerpt(name)}")
            k = stop.start()
            if line[k] == '"':
                break
            if k + 1 >= n:
                fail(lineno, f"unterminated quoted value for label {excerpt(name)}")
            k += 2
        raw = line[start:k]
        k += 1
        if name[:2] == "__":
            fail(lineno, f"label name {excerpt(name)} is reserved (names starting __)")
        if name in labels:
            fail(lineno, f"duplicate label name {excerpt(name)}")
        labels[sys.intern(name)] = sys.intern(unescape(raw) if "\\" in raw else raw)
        c = line[k : k + 1]
        if c == "}":
            return Labels(labels), k + 1
        if c != ",":
            if c in (" ", "\t"):
                fail(lineno, "whitespace inside the label set (not allowed in OpenMetrics)")
            fail(lineno, f"expected ',' or '}}' after the value of label {excerpt(name)}")
        k += 1
        if line[k : k + 1] == "}":
            fail(lineno, "trailing comma in label set (not allowed in OpenMetrics)")


def _bad_label_start(line: str, k: int, lineno: int) -> NoReturn:
    c = line[k : k + 1]
    if not c:
        fail(lineno, "unterminated label set (missing '}')")
    if c in (" ", "\t"):
        fail(lineno, "whitespace inside the label set (not allowed in OpenMetrics)")
    if c == ",":
        fail(lineno, "empty label: leading or repeated comma in label set")
    if c == '"':
        fail(lineno, "quoted label names are not part of OpenMetrics 1.0")
    fail(lineno, f"invalid label name at {excerpt(line[k:])}")


def _number(token: str, lineno: int, what: str = "value") -> float:
    value = go_float(token)
    if value is None:
        if _realnumber_match(token) is not None:
            fail(lineno, f"{what} {excerpt(token)} is out of range for a 64-bit float")
        fail(lineno, f"invalid {what} {excerpt(token)}: expected a number, NaN or ±Inf")
    return value


def _timestamp(token: str, lineno: int) -> float:
    if _realnumber_match(token) is None:
        fail(lineno, f"invalid timestamp {excerpt(token)}: expected seconds as a number")
    value = float(token)
    if value == _INF or value == -_INF:
        fail(lineno, f"timestamp {excerpt(token)} is out of range")
    return value


def repeat_key(token: str | None) -> object:
    """What tells two timestamps of one series apart for the repeat rule: as in
    prometheus_client, integer and `a.b` spellings to the nanosecond, others as floats
    (and never equal to the first kind)."""
    if token is None:
        return None
    whole, dot, fraction = token.partition(".")
    if _integer_match(whole) is not None and (not dot or _digits_match(fraction) is not None):
        return (int(whole), fraction[:9].ljust(9, "0"))
    return float(token)


def read_sample(line: str, lineno: int) -> tuple[Sample, bool, str | None]:
    """One sample line; whether it carries an exemplar; its timestamp's spelling."""
    m = _metric_name_at(line)
    if m is None:
        if line[0] == "{":
            fail(lineno, "sample has no metric name (quoted names are not part of 1.0)")
        fail(lineno, f"invalid metric name at the start of {excerpt(line)}")
    name = sys.intern(m.group())
    k = m.end()
    labels = EMPTY_LABELS
    if line[k : k + 1] == "{":
        labels, k = _labels(line, k, lineno)
    if line[k : k + 1] != " ":
        if k == len(line):
            fail(lineno, f"sample {excerpt(line)} has no value")
    elif line[k + 1 : k + 2] == "{" and labels is EMPTY_LABELS and line[k - 1 : k] != "}":
        fail(lineno, "blank between the metric name and its labels (not allowed in OpenMetrics)")
    if line[k : k + 1] != " ":
        fail(lineno, f"expected a single space before the value in {excerpt(line)}")
    values, marker, exemplar = line[k + 1 :].partition(" # ")
    tokens = values.split(" ")
    if "" in tokens or len(tokens) > 2:
        if "\t" in values:
            fail(lineno, f"tab in {excerpt(line)}: OpenMetrics separates tokens by one space")
        fail(lineno, f"expected '<value> [<timestamp>]' after the labels in {excerpt(line)}")
    value = _number(tokens[0], lineno)
    timestamp = _timestamp(tokens[1], lineno) if len(tokens) == 2 else None
    if marker:
        _check_exemplar(exemplar, lineno)
    stamp = tokens[1] if len(tokens) == 2 else None
    return Sample(name, labels, value, timestamp), bool(marker), stamp


def _check_exemplar(text: str, lineno: int) -> None:
    if text[:1] != "{":
        fail(lineno, "exemplar must start with a label set: '# {…} <value> [<timestamp>]'")
    labels, k = _labels(text, 0, lineno)
    if sum(len(name) + len(value) for name, value in labels.items()) > _EXEMPLAR_MAX_CHARS:
        fail(lineno, "exemplar labels exceed 128 characters")
    if text[k : k + 1] != " ":
        fail(lineno, f"malformed exemplar {excerpt(text)}")
    tokens = text[k + 1 :].split(" ")
    if "" in tokens or len(tokens) > 2:
        fail(lineno, f"malformed exemplar {excerpt(text)}")
    _number(tokens[0], lineno, "exemplar value")
    if len(tokens) == 2:
        _timestamp(tokens[1], lineno)
