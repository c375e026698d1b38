"""Which objective the breach is about, measured over the incident window: an SLO's own
objective when the walk was given one, else the baseline's own p95 (measured: "what this
fleet delivered the hour before"), never a made-up target. The canary plan sizes its
sample from this (observed bad share against the allowed one).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from inventory.models import Fleet
from queries import Backend, FractionBelow, Quantile, Scope, Window, run_queries
from triage.canary import BreachedObjective

SIDE_KINDS = {"ttft": ("ttft", "e2e"), "tpot": ("itl", "tpot", "e2e"), "availability": ("success",)}
KEYS = {"ttft": "ttft", "itl": "itl", "tpot": "request_tpot", "e2e": "e2e"}
BASELINE_TARGET = 0.95  # without an SLO: the baseline's p95 edge, and the share met there


def _good(
    fleet: Fleet,
    scope: Scope,
    key: str,
    le: float,
    window: tuple[datetime, datetime],
    backend: Backend,
) -> float | None:
    seconds = (window[1] - window[0]).total_seconds()
    at = Window(window[1], window[1], 60.0)
    found = run_queries(
        {"good": FractionBelow(key, le, window_seconds=seconds)},
        scope=scope,
        window=at,
        backend=backend,
    )["good"]
    values = [v for s in found.series for v in s.values[-1:] if v is not None]
    # Bounds when `le` is not a bucket edge: the lower one, so a breach is never overstated.
    return min(values) if values else None


def breached_objective(
    fleet: Fleet,
    *,
    slo: Any,
    side: str,
    replicas: tuple[str, ...],
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
    backend: Backend,
) -> BreachedObjective | None:
    if side not in SIDE_KINDS:
        return None
    if slo is not None:
        scope = Scope(fleet, slo.model_name or None, tuple(slo.instances) or None)
        for objective in slo.objectives.all():
            if objective.kind not in SIDE_KINDS[side] or objective.kind == "success":
                continue
            good = _good(
                fleet, scope, KEYS[objective.kind], objective.threshold_seconds, window, backend
            )
            if good is not None and good < objective.target:
                return BreachedObjective(
                    objective.kind,
                    objective.threshold_seconds,
                    objective.target,
                    good,
                    slo=str(slo),
                )
        return None
    if not replicas:
        return None
    kind: Literal["ttft", "itl"] = "ttft" if side == "ttft" else "itl"
    scope = Scope(fleet, None, replicas)
    seconds = (baseline[1] - baseline[0]).total_seconds()
    before = run_queries(
        {"p95": Quantile(KEYS[kind], BASELINE_TARGET, window_seconds=seconds)},
        scope=scope,
        window=Window(baseline[1], baseline[1], 60.0),
        backend=backend,
    )["p95"]
    edges = [v for s in before.series for v in (s.upper or s.values)[-1:] if v is not None]
    if not edges:
        return None
    # The bucket edge holding the baseline's p95, and the share the baseline met at it:
    # "what this fleet delivered the hour before", measured at a real edge (no interpolation).
    edge = max(edges)
    target = _good(fleet, scope, KEYS[kind], edge, baseline, backend)
    good = _good(fleet, scope, KEYS[kind], edge, window, backend)
    if good is None or target is None or not 0 < target < 1 or good >= target:
        return None
    return BreachedObjective(
        kind, edge, round(target, 4), good, slo=f"the baseline's own share within {edge:g} s"
    )
