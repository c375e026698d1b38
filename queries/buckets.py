"""Per-bucket rates (`Rate(key, by=(..., "le"))`, for heatmaps) summed across replicas.

Replicas may bucket one histogram differently: vLLM's token-count buckets end at
each replica's `max_model_len`, so a fleet mixing context lengths has edges
that only some replicas expose. Summed by `le`, such an edge would hold only
those replicas' counts and the next bucket would look like it shrank. Only the
edges every scoped endpoint has (the plan's `buckets`, plus `+Inf`) are kept;
the observations under a dropped edge stay counted in the next kept one.
"""

from __future__ import annotations

import math

from queries.histogram_math import parse_le
from queries.plan import Plan
from queries.result import QueryResult
from queries.spec import Rate


def common_edges_only(plan: Plan, result: QueryResult) -> QueryResult:
    spec = plan.spec
    if not (isinstance(spec, Rate) and "le" in spec.by and result.series):
        return result
    common = set(plan.keys[spec.key].buckets) | {math.inf}
    kept, dropped = [], set()
    for series in result.series:
        edge = parse_le(series.labels.get("le", "nan"))
        if edge in common:
            kept.append(series)
        else:
            dropped.add(edge)
    if not dropped:
        return result
    shown = ", ".join(f"{edge:g}" for edge in sorted(dropped))
    warning = f"le={shown} not on every replica: counted in the next shared bucket"
    return QueryResult(
        result.status,
        tuple(kept),
        result.reason,
        result.resolved_name,
        result.message,
        (*result.warnings, warning),
    )
