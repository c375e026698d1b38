"""The PromQL backend: specs compiled to PromQL text (`compile`, with escaping and
selectors in `text`) and run on Prometheus' HTTP API (`backend`)."""

from __future__ import annotations

from queries.promql.backend import Fetched, failed_scrapes, fetch, result_from
from queries.promql.compile import Compiled, bracket, bracket_warning, compile_plan

__all__ = [
    "Compiled",
    "Fetched",
    "bracket",
    "bracket_warning",
    "compile_plan",
    "failed_scrapes",
    "fetch",
    "result_from",
]
