"""The PromQL backend: specs compiled to PromQL text (`compile`, with escaping and
selectors in `text`) and run on Prometheus' HTTP API (`backend`)."""

from __future__ import annotations

from queries.promql.backend import run_prometheus
from queries.promql.compile import bracket, bracket_warning, compile_plan

__all__ = ["bracket", "bracket_warning", "compile_plan", "run_prometheus"]
