"""Which objective the breach is about, measured over the incident window: an SLO's own
objective when the walk was given one, else the baseline's own p95 (measured: "what this
fleet delivered the hour before"), never a made-up target. The canary plan sizes its
sample from this (observed bad share against the allowed one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from inventory.models import Fleet
from queries import (
    Backend,
    FractionBelow,
    Increase,
    Quantile,
    QueryResult,
    Scope,
    Spec,
    Window,
    run_queries,
)
from triage.canary import BreachedObjective
from triage.walk.types import Figure, Side

SIDE_KINDS = {"ttft": ("ttft", "e2e"), "tpot": ("itl", "tpot", "e2e"), "availability": ("success",)}
KEYS = {"ttft": "ttft", "itl": "itl", "tpot": "request_tpot", "e2e": "e2e"}
BASELINE_TARGET = 0.95  # without an SLO: the baseline's p95 edge, and the share met there


def _good_shares(
    scope: Scope,
    key: str,
    le: float,
    spans: Mapping[str, tuple[datetime, datetime]],
    backend: Backend,
) -> dict[str, float | None]:
    """The share of observations within `le` over each span, in one read of the backend
    (the baseline's and the window's share of a no-SLO objective come together)."""
    specs: dict[str, Spec] = {
        name: FractionBelow(key, le, window_seconds=(end - start).total_seconds())
        for name, (start, end) in spans.items()
    }
    windows = {name: Window(end, end, 60.0) for name, (_, end) in spans.items()}
    any_window = next(iter(windows.values()))
    found = run_queries(specs, scope=scope, window=any_window, backend=backend, windows=windows)
    shares: dict[str, float | None] = {}
    for name, result in found.items():
        values = [v for s in result.series for v in s.values[-1:] if v is not None]
        # Bounds when `le` is not a bucket edge: the lower one, so a breach is never
        # overstated.
        shares[name] = min(values) if values else None
    return shares


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
            good = _good_shares(
                scope, KEYS[objective.kind], objective.threshold_seconds, {"w": window}, backend
            )["w"]
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
    shares = _good_shares(scope, KEYS[kind], edge, {"b": baseline, "w": window}, backend)
    target, good = shares["b"], shares["w"]
    if good is None or target is None or not 0 < target < 1 or good >= target:
        return None
    return BreachedObjective(
        kind, edge, round(target, 4), good, slo=f"the baseline's own share within {edge:g} s"
    )


SIDE_OF_KIND: dict[str, Side] = {"ttft": "ttft", "itl": "tpot", "tpot": "tpot", "e2e": "ttft",
                "success": "availability"}  # fmt: skip


@dataclass(frozen=True)
class SloReading:
    """One objective over the window: the good share (lower == upper unless the threshold
    sits between bucket edges) against its target."""

    kind: str
    target: float
    lower: float | None
    upper: float | None
    figure: Figure

    @property
    def breached(self) -> bool:
        return self.upper is not None and self.upper < self.target

    @property
    def undecided(self) -> bool:
        """The interval straddles the target: neither met nor breached can be said."""
        return (self.lower is not None and self.upper is not None
                and self.lower < self.target <= self.upper)  # fmt: skip


def slo_readings(
    fleet: Fleet, slo: Any, window: tuple[datetime, datetime], backend: Backend
) -> list[SloReading]:
    """Each objective of `slo` over the window, with the requests it rests on."""
    scope = Scope(fleet, slo.model_name or None, tuple(slo.instances) or None)
    seconds = (window[1] - window[0]).total_seconds()
    at = Window(window[1], window[1], 60.0)
    specs: dict[str, Spec] = {}
    objectives = list(slo.objectives.all())
    for objective in objectives:
        if objective.kind == "success":
            specs["success"] = Increase(
                "request_success", by=("finished_reason",), window_seconds=seconds
            )
        else:
            key = KEYS[objective.kind]
            specs[objective.kind] = FractionBelow(
                key, objective.threshold_seconds, window_seconds=seconds
            )
            specs[f"{objective.kind}:count"] = Increase(key, window_seconds=seconds)
    results = run_queries(specs, scope=scope, window=at, backend=backend)
    readings: list[SloReading] = []
    for objective in objectives:
        result = results[objective.kind]
        lower, upper, requests = _share_of(objective, slo, result, results)
        if objective.kind == "success":
            what = f"requests finished without {', '.join(slo.bad_finish_reasons)}"
        else:
            what = f"{objective.kind} <= {objective.threshold_seconds:g} s"
        bound = ""
        if lower is not None and upper is not None and lower != upper:
            bound = f"between {lower:.4f} and {upper:.4f}: the threshold is between bucket edges"
        span = f"{window[0]:%Y-%m-%dT%H:%M:%SZ} .. {window[1]:%Y-%m-%dT%H:%M:%SZ}"
        note = "" if result.has_data else f"; {result.message or result.reason}"
        figure = Figure(
            name=f"slo_{objective.kind}_good_share",
            unit="ratio",
            value=upper if lower == upper else None,
            threshold=f">= {objective.target:g} ({slo})",
            source=f"share of {what} ({result.resolved_name or objective.kind}), {span}, "
            f"{backend}{note}",
            requests=requests,
            bound=bound,
        )
        readings.append(SloReading(objective.kind, objective.target, lower, upper, figure))
    return readings


def _share_of(
    objective: Any, slo: Any, result: QueryResult, results: dict[str, QueryResult]
) -> tuple[float | None, float | None, float | None]:
    if not result.has_data:
        return None, None, None
    if objective.kind == "success":
        bad_reasons = set(slo.bad_finish_reasons)
        total = bad = 0.0
        for series in result.series:
            value = series.values[-1] if series.values else None
            if value is None:
                continue
            total += value
            bad += value if series.labels.get("finished_reason") in bad_reasons else 0.0
        share = 1.0 - bad / total if total > 0 else None
        return share, share, total
    values = {s.labels.get("bound", ""): s.values[-1] for s in result.series if s.values}
    count = results[f"{objective.kind}:count"]
    requests = next((s.values[-1] for s in count.series if s.values), None)
    if "lower" in values or "upper" in values:
        return values.get("lower") or 0.0, values.get("upper"), requests
    share = values.get("")
    return share, share, requests
