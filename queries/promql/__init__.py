"""The PromQL backend: specs compiled to PromQL text (`compile`, with escaping and
selectors in `text`) and run on Prometheus' HTTP API (`backend`)."""

from __future__ import annotations

from queries.promql.backend import Fetched, failed_scrapes, fetch, result_from
from queries.promql.compile import Compiled, bracket, bracket_warning, compile_plan
from queries.promql.text import (
    any_of_regex,
    duration,
    go_float,
    le_matcher,
    matcher,
    selector,
    string_literal,
)

__all__ = [
    "Compiled",
    "Fetched",
    "any_of_regex",
    "bracket",
    "bracket_warning",
    "compile_plan",
    "duration",
    "failed_scrapes",
    "fetch",
    "go_float",
    "le_matcher",
    "matcher",
    "result_from",
    "selector",
    "string_literal",
]
