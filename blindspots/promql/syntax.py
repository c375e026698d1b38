"""The lexical tables the lexer and the walk share: template-variable syntax, Grafana's
built-in interval variables, PromQL's aggregations and keywords."""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

# What an interval variable stands for when it is substituted before parsing.
DEFAULT_DURATION = "5m"
DEFAULT_SECONDS = 300

NO_VARIABLES: Mapping[str, tuple[str, ...]] = MappingProxyType({})
WILDCARD = ".*"
ALL_VALUES = frozenset({"All", "all", "$__all", "__all", "*"})

# Grafana's built-in interval variables: the substitution for each.
BUILTIN_DURATIONS = frozenset(
    {"__rate_interval", "__interval", "__range", "__auto_interval", "__auto"}
)
BUILTIN_NUMBERS = {
    "__interval_ms": str(DEFAULT_SECONDS * 1000),
    "__range_ms": str(DEFAULT_SECONDS * 1000),
    "__range_s": str(DEFAULT_SECONDS),
    "__rate_interval_ms": str(DEFAULT_SECONDS * 1000),
}

AGGREGATIONS = frozenset(
    {
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    }
)
GROUPING = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
KEYWORDS = GROUPING | {"offset", "bool", "and", "or", "unless", "atan2"}
NUMBER_NAMES = frozenset({"inf", "nan"})

PLACEHOLDER = "__fsvar{}__"
PLACEHOLDER_RE = re.compile(r"__fsvar(\d+)__")
# Template variable references inside a string: `$var`, `${var}`, `${var:fmt}`, `[[var]]`.
VARIABLE_RE = re.compile(
    r"\$\{(?P<braced>\w+)(?::(?P<fmt>[\w]+))?[^}]*\}|\$(?P<plain>\w+)|\[\[(?P<old>\w+)(?::(?P<oldfmt>\w+))?\]\]"
)
REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$")
IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
IDENT_CHARS = IDENT_START | frozenset("0123456789:")
TWO_CHAR_OPS = frozenset({"=~", "!~", "!=", "==", "<=", ">="})
CLOSERS = {"(": ")", "{": "}", "[": "]"}
# Text appended to a prefix of a bad expression to see whether it could still go on.
COMPLETIONS = ("", " 1", " x", " x[5m]", "[5m]", "5m", '=""', '""', " 1)")
MAX_LOCATE_TOKENS = 200
