"""Building PromQL text safely: string literals, label matchers, selectors, durations.

Every value that came from a user, an endpoint or the database goes through
`string_literal`, so a label value such as `"} or up{x="` stays inside its
quotes (reliability D27). Label and metric names are checked against
Prometheus' grammar instead of escaped: a bad name is a bug, not input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
METRIC_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
MATCH_OPS = frozenset({"=", "!=", "=~", "!~"})
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
# One str.translate pass: an overview quotes an instance regex of every replica per query.
_TRANSLATION = str.maketrans(
    {
        **{chr(code): f"\\u{code:04x}" for code in (*range(0x20), 0x7F)},
        **_ESCAPES,
    }
)


def string_literal(value: str) -> str:
    """`value` as a double-quoted PromQL string (Go escaping rules)."""
    return '"' + value.translate(_TRANSLATION) + '"'


def matcher(name: str, op: str, value: str) -> str:
    if not LABEL_NAME.fullmatch(name):
        raise ValueError(f"{name[:40]!r} is not a Prometheus label name")
    if op not in MATCH_OPS:
        raise ValueError(f"{op!r} is not a label matcher")
    return f"{name}{op}{string_literal(value)}"


def selector(metric: str, matchers: Iterable[str]) -> str:
    """`metric{m1,m2}`; a name outside the grammar is matched through `__name__` instead."""
    parts = list(matchers)
    if not METRIC_NAME.fullmatch(metric):
        return "{" + ",".join([matcher("__name__", "=", metric), *parts]) + "}"
    return metric + ("{" + ",".join(parts) + "}" if parts else "")


def any_of_regex(values: Iterable[str]) -> str:
    """A regex that matches exactly one of `values` (Prometheus anchors it at both ends)."""
    return "|".join(re.escape(v) for v in sorted(set(values)))


def go_float(value: float) -> str:
    """How Go's client libraries (and Prometheus 3) print a bucket edge: 1, 0.005, 1e+06."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = f"{value:.17g}"
    # Shortest round-trip form, as Go's strconv.FormatFloat(v, 'g', -1, 64) gives.
    for digits in range(1, 18):
        candidate = f"{value:.{digits}g}"
        if float(candidate) == value:
            text = candidate
            break
    mantissa, _, exponent = text.partition("e")
    if not exponent:
        return mantissa
    sign, digits_part = exponent[0], exponent[1:].lstrip("0")
    return f"{mantissa}e{sign}{digits_part.zfill(2)}"


def python_client_float(value: float) -> str:
    """How Python's prometheus_client prints an edge (vLLM's `le`): 1.0, 0.005, 1e+06."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    dot = text.find(".")
    # The client mimics Go's switch to exponents for large values.
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


def le_spellings(edge: float) -> tuple[str, ...]:
    """Every way exporters spell bucket edge `edge` in `le` ("1" and "1.0" are one edge)."""
    spellings = {go_float(edge), python_client_float(edge), repr(edge)}
    if math.isfinite(edge) and edge == int(edge) and abs(edge) < 1e15:
        spellings.add(str(int(edge)))
    return tuple(sorted(spellings))


def le_matcher(edge: float) -> str:
    return matcher("le", "=~", any_of_regex(le_spellings(edge)))


def duration(seconds: float) -> str:
    """A PromQL range duration: whole seconds as `60s`, anything finer in milliseconds."""
    millis = round(seconds * 1000)
    if millis <= 0:
        raise ValueError(f"a range must be positive, not {seconds}s")
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


def number(value: float) -> str:
    """A float literal PromQL parses back to the same value."""
    return repr(float(value))
