"""The lexical layer of the exposition parser: names, label sets, numbers, HELP text.

Everything here either returns a validated value or raises ExpositionError
with a specific message.

The text format (0.0.4) is read as Prometheus' own text parser reads it (the one
`promtool check metrics` runs): any run of blanks and tabs may separate tokens,
also inside `{...}` and before the first one; a blank is only required where two
tokens would otherwise merge. Two kinds of reading are here: the general walk
(`parse_text_line`, `read_text_comment`), which accepts everything the format
allows, and the fast paths (`labels_of_texts`, `label_text_labels`,
`read_usual_comment`, used in bulk by the parser), which accept only the one
layout every client library writes (`name{a="b",...} value`, `# HELP name text`)
and leave anything else to the general walk, giving the same result on what
they accept.
"""

from __future__ import annotations

import re
import sys

from inventory.exposition.assembler import TEXT_TYPES, Metadata, metadata_fields
from inventory.exposition.model import (
    EMPTY_LABELS,
    SHARED,
    LabelCache,
    Labels,
    excerpt,
    fail,
    go_float,
)

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"

metric_name_match = re.compile(METRIC_NAME).fullmatch
_metric_name_at = re.compile(METRIC_NAME).match
_label_name_at = re.compile(LABEL_NAME).match
_blanks = re.compile(r"[ \t]*")
_token = re.compile(r"[^ \t]*")


def _blanks_end(line: str, k: int = 0) -> int:
    """The index of the first character at or after k that is not a blank or a tab."""
    m = _blanks.match(line, k)
    return m.end() if m is not None else k


def _token_end(line: str, k: int) -> int:
    """The index of the first blank, tab or end of line at or after k."""
    m = _token.match(line, k)
    return m.end() if m is not None else k


_int64_match = re.compile(r"[+-]?[0-9]+").fullmatch

# The canonical label text after `{`: no blanks between tokens, escapes \\ \" \n only.
# Possessive quantifiers: a long value is matched in one sweep, with no backtracking.
_TEXT_VALUE = r'(?:[^"\\]++|\\[\\"n])*+'
_TEXT_PAIR = f'{LABEL_NAME}="{_TEXT_VALUE}"'
_canonical_rest = re.compile(rf"(?:{_TEXT_PAIR}(?:,{_TEXT_PAIR})*+,?)?\}}").fullmatch
_text_pairs = re.compile(rf'({LABEL_NAME})="({_TEXT_VALUE})"').findall
_text_escape = re.compile(r"\\(.?)", re.DOTALL)
_quoted_stop = re.compile(r'["\\]').search

_INT64 = 2**63
_TEXT_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_HELP_ESCAPES = {"\\": "\\", "n": "\n"}


# --- numbers -------------------------------------------------------------------------------


def text_value(token: str, lineno: int) -> float:
    """A text-format sample value: what Go's strconv.ParseFloat accepts, as the format says
    (without the hexadecimal `p` exponents and `_` digit separators that Prometheus refuses)."""
    value = go_float(token)
    if value is None:
        if token[-1:] == "\r":
            fail(lineno, "carriage return at the end of the line (CRLF line ends?)")
        if token and not token.strip("0123456789.eE+-") and float_or_none(token) is not None:
            fail(lineno, f"value {excerpt(token)} is out of range for a 64-bit float")
        fail(lineno, f"invalid value {excerpt(token)}: expected a number, NaN or ±Inf")
    return value


def float_or_none(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def text_timestamp(token: str, lineno: int) -> float:
    """Text-format timestamps are integer milliseconds (Go's strconv.ParseInt, 64 bits);
    we return seconds."""
    if _int64_match(token) is None:
        if token[-1:] == "\r":
            fail(lineno, "carriage return at the end of the line (CRLF line ends?)")
        fail(lineno, f"invalid timestamp {excerpt(token)}: expected integer milliseconds")
    millis = int(token)
    if not -_INT64 <= millis < _INT64:
        fail(lineno, f"timestamp {excerpt(token)} is out of range for a 64-bit integer")
    return millis / 1000


# --- label sets ------------------------------------------------------------------------------


def label_text_labels(rest: str) -> Labels | None:
    """The Labels of a canonical label text (what follows `{`, up to and including `}`),
    or None if it is not canonical or not valid (the general walk then decides)."""
    if _canonical_rest(rest) is None:
        return None
    pairs = _text_pairs(rest)
    intern = sys.intern
    labels = {}
    for name, raw in pairs:
        if name[:2] == "__":
            return None
        labels[intern(name)] = intern(_unescape_text(raw) if "\\" in raw else raw)
    if len(labels) != len(pairs):
        return None  # a duplicate name
    return Labels(labels) if labels else EMPTY_LABELS


_piece_match = re.compile(rf'({LABEL_NAME})="([^"\\]*+)').fullmatch


def labels_of_texts(rests: set[str]) -> dict[str, Labels | None]:
    """`label_text_labels` for many label texts at once (what follows `{` in each line).

    A text without backslashes is split at `",` into its `name="value` pieces, which
    repeat across a payload's lines (the same engine, model and bucket bounds): each
    distinct piece is validated once. Splitting there is exact: without an escape a
    value cannot hold a quote.
    """
    pieces: dict[str, tuple[str, str] | None] = {}
    get = pieces.get
    out: dict[str, Labels | None] = {}
    for rest in rests:
        if "\\" in rest:
            out[rest] = label_text_labels(rest)
            continue
        if rest[-2:] == '"}':
            inner = rest[:-2]
        elif rest[-3:] == '",}':
            inner = rest[:-3]
        else:
            out[rest] = EMPTY_LABELS if rest == "}" else None
            continue
        parts = inner.split('",')
        pairs = list(map(get, parts))
        if None in pairs:
            for part in parts:
                if part not in pieces:
                    pieces[part] = _piece(part)
            pairs = list(map(get, parts))
            if None in pairs:
                out[rest] = None
                continue
        labels = Labels(pairs)  # type: ignore[arg-type]  # no None left: checked above
        out[rest] = labels if len(labels) == len(pairs) else None  # a repeated name: no
    return out


def _piece(text: str) -> tuple[str, str] | None:
    m = _piece_match(text)
    if m is None or text[:2] == "__":
        return None
    return sys.intern(m.group(1)), sys.intern(m.group(2))


def _unescape_text(raw: str) -> str:
    return _text_escape.sub(lambda m: _TEXT_ESCAPES[m.group(1)], raw)


def _walk_labels(line: str, k: int, lineno: int) -> tuple[Labels, int]:
    """Read a `{...}` group starting at line[k] == '{'; return it and the index after '}'."""
    n = len(line)
    labels: dict[str, str] = {}
    while True:
        k = _blanks_end(line, k + 1)
        if k >= n:
            fail(lineno, "unterminated label set (missing '}')")
        c = line[k]
        if c == "}":
            return (Labels(labels) if labels else EMPTY_LABELS), k + 1
        m = _label_name_at(line, k)
        if m is None:
            if c == ",":
                fail(lineno, "empty label: leading or repeated comma in label set")
            if c == "=":
                fail(lineno, "empty label name")
            if c == '"':
                fail(lineno, "quoted label names are not supported")
            fail(lineno, f"invalid label name at {excerpt(line[k:])}")
        name = m.group()
        k = _blanks_end(line, m.end())
        if k >= n or line[k] != "=":
            fail(lineno, f"expected '=' after label name {excerpt(name)}")
        k = _blanks_end(line, k + 1)
        if k >= n or line[k] != '"':
            if k < n and line[k] in ",}":
                fail(lineno, f"empty unquoted value for label {excerpt(name)}")
            fail(lineno, f"value of label {excerpt(name)} must be a quoted string")
        value, k = _read_quoted(line, k + 1, lineno, name)
        if name[:2] == "__":
            fail(lineno, f"label name {excerpt(name)} is reserved (names starting __)")
        if name in labels:
            fail(lineno, f"duplicate label name {excerpt(name)}")
        labels[sys.intern(name)] = sys.intern(value)
        k = _blanks_end(line, k)
        if k >= n:
            fail(lineno, "unterminated label set (missing '}')")
        if line[k] == "}":
            return Labels(labels), k + 1
        if line[k] != ",":
            fail(lineno, f"expected ',' or '}}' after the value of label {excerpt(name)}")


def _read_quoted(line: str, i: int, lineno: int, name: str) -> tuple[str, int]:
    """The unescaped text-format label value starting at line[i]; the index after its quote."""
    parts = []
    while True:
        m = _quoted_stop(line, i)  # jump straight to the next character that matters
        if m is None:
            fail(lineno, f"unterminated quoted value for label {excerpt(name)}")
        at = m.start()
        parts.append(line[i:at])
        if line[at] == '"':
            return "".join(parts), at + 1
        escaped = _TEXT_ESCAPES.get(line[at + 1 : at + 2])
        if escaped is None:
            bad = excerpt(line[at : at + 2])
            fail(lineno, f"invalid escape {bad} in the value of label {excerpt(name)}")
        parts.append(escaped)
        i = at + 2


# --- whole lines -----------------------------------------------------------------------------


def parse_text_line(line: str, lineno: int) -> tuple[str, Labels, float, float | None]:
    """A text-format sample line, in any spelling the format allows."""
    n = len(line)
    k = _blanks_end(line)
    m = _metric_name_at(line, k)
    if m is None:
        if line[k : k + 1] == "{":
            fail(lineno, "sample has no metric name (the quoted-name syntax is not supported)")
        fail(lineno, f"invalid metric name at the start of {excerpt(line[k:])}")
    name = sys.intern(m.group())
    k = _blanks_end(line, m.end())
    labels = EMPTY_LABELS
    if k < n and line[k] == "{":
        labels, k = _walk_labels(line, k, lineno)
        k = _blanks_end(line, k)
    # Without labels the value may follow the name directly when they cannot merge
    # (`x-1`): the format only asks for a blank where tokens would run together.
    end = _token_end(line, k)
    token = line[k:end]
    if not token:
        fail(lineno, f"sample {excerpt(line[:k].strip())} has no value")
    value = text_value(token, lineno)
    if end == n:
        return name, labels, value, None
    k = _blanks_end(line, end)
    if k == n:
        # Prometheus' parser then expects a timestamp (prometheus/common#33).
        fail(lineno, f"invalid value field: trailing whitespace after {excerpt(token)}")
    end = _token_end(line, k)
    timestamp = text_timestamp(line[k:end], lineno)
    if end != n:
        fail(lineno, f"unexpected text after the timestamp in {excerpt(line)}")
    return name, labels, value, timestamp


# One validated metadata line: (kind, family name, value). kind 0 is a plain comment.
TextComment = tuple[int, str, str]
PLAIN: TextComment = (0, "", "")
HELP_KIND, TYPE_KIND = 1, 2


def read_usual_comment(line: str) -> TextComment | None:
    """A `#` line as client libraries write it (`# HELP name text`, `# TYPE name type`,
    `# other words`), read with one split; None for anything else (the general walk
    reads that). Gives exactly what `read_text_comment` gives for those lines."""
    parts = line.split(" ", 3)
    if len(parts) < 2 or parts[0] != "#" or not parts[1] or "\t" in parts[1]:
        return None
    word = parts[1]
    if word != "HELP" and word != "TYPE":
        return PLAIN
    if len(parts) < 4 or metric_name_match(parts[2]) is None:
        return None
    name = sys.intern(parts[2])
    if word == "TYPE":
        return (TYPE_KIND, name, parts[3]) if parts[3] in TEXT_TYPES else None
    text = parts[3]
    if "\\" in text:
        return None
    return HELP_KIND, name, text.strip()


def read_text_comment(line: str, lineno: int) -> TextComment:
    """A text-format line whose first non-blank character is `#`.

    It is HELP or TYPE metadata when the first token after `#` is HELP or TYPE (a
    blank between `#` and the word is optional, as they cannot merge); any other
    comment is ignored.
    """
    n = len(line)
    k = _blanks_end(line, _blanks_end(line) + 1)
    end = _token_end(line, k)
    word = line[k:end]
    if word != "HELP" and word != "TYPE":
        return PLAIN
    k = _blanks_end(line, end)
    m = _metric_name_at(line, k)
    if m is None:
        if k == n:
            fail(lineno, f"malformed {word} line {excerpt(line)}: expected '# {word} <name> …'")
        fail(lineno, f"invalid metric name in {word} line {excerpt(line)}")
    name_end = m.end()
    if name_end < n and line[name_end] not in " \t":
        fail(lineno, f"invalid metric name in {word} line {excerpt(line)}")
    name = sys.intern(m.group())
    k = _blanks_end(line, name_end)
    if word == "HELP":
        return HELP_KIND, name, unescape_text_help(line[k:], lineno).strip()
    value = line[k:]
    if value not in TEXT_TYPES:
        if not value:
            fail(lineno, f"malformed TYPE line {excerpt(line)}: expected '# TYPE <name> <type>'")
        if value[-1:] == "\r":
            fail(lineno, "carriage return at the end of the line (CRLF line ends?)")
        fail(lineno, f"unknown metric type {excerpt(value)} for {excerpt(name)}")
    return TYPE_KIND, name, value


def unescape_text_help(text: str, lineno: int) -> str:
    """Text-format HELP escapes: exactly `\\\\` and `\\n`."""

    def replace(m: re.Match[str]) -> str:
        escaped = _HELP_ESCAPES.get(m.group(1))
        if escaped is None:
            fail(lineno, f"invalid escape {excerpt(m.group(0))} in HELP text")
        return escaped

    return _text_escape.sub(replace, text) if "\\" in text else text


def text_comment_fields(line: str, lineno: int, cache: LabelCache) -> Metadata:
    """The metadata fields of a `#` line (kind 0: a plain comment), remembered by line
    for the endpoint and for the process (SHARED)."""
    fields = cache.metadata.get(line)
    if fields is None:
        fields = SHARED.metadata.get(line)
        if fields is None:
            kind, name, value = read_usual_comment(line) or read_text_comment(line, lineno)
            if kind:
                word = "HELP" if kind == HELP_KIND else "TYPE"
                fields = metadata_fields(word, name, value, lineno, om=False)
            else:
                fields = _COMMENT
            SHARED.metadata.put(line, fields)
        cache.metadata.put(line, fields)
    return fields


_COMMENT: Metadata = (0, "", "", None)
