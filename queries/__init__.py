"""Query specs and the two backends that run them (PromQL on Prometheus, numpy locally).

from queries import Quantile, Scope, Window, run_query
result = run_query(Quantile("ttft", 0.95, by=("model_name",)),
                   scope=Scope(fleet), window=window, backend="local")
"""

from __future__ import annotations

from queries.deadline import page_deadline
from queries.features import Feature, feature_statuses
from queries.histogram_math import parse_le
from queries.plan import ENDPOINT_KIND_FOR_SOURCE, NameGroup, ResolvedKey, resolve_key
from queries.result import QueryResult, ResultSeries
from queries.run import MAX_PARALLEL_QUERIES, Backend, promql_of, run_queries, run_query
from queries.spec import (
    FractionBelow,
    Gauge,
    Increase,
    Mean,
    Quantile,
    Rate,
    Ratio,
    Scope,
    Spec,
    Window,
    spec_keys,
)

__all__ = [
    "ENDPOINT_KIND_FOR_SOURCE",
    "MAX_PARALLEL_QUERIES",
    "Backend",
    "Feature",
    "FractionBelow",
    "Gauge",
    "Increase",
    "Mean",
    "NameGroup",
    "Quantile",
    "QueryResult",
    "Rate",
    "Ratio",
    "ResolvedKey",
    "ResultSeries",
    "Scope",
    "Spec",
    "Window",
    "feature_statuses",
    "page_deadline",
    "parse_le",
    "promql_of",
    "resolve_key",
    "run_queries",
    "run_query",
    "spec_keys",
]
