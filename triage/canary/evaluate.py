"""`canary_evaluate`: did the canary recover the breached objective, against its control?

Both sides are read through the query seam over the same window, as one point at its end
(`window_seconds` = end - start): the objective's good fraction (`FractionBelow` on its
histogram, or the share of good finishes), the requests it rests on (`Increase`), and the
error ratio from `request_success` by finished_reason. A threshold between bucket edges
gives an interval, not a value: the canary recovered only if the whole interval meets the
target, missed only if the whole interval misses it, and is inconclusive in between.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from inventory.models import Fleet
from queries import Backend, FractionBelow, Increase, QueryResult, Scope, Spec, Window, run_queries
from triage.canary.plan import ERROR_MARGIN
from triage.canary.types import SUCCESS_KEY, BreachedObjective
from triage.walk.types import Figure

__all__ = ["CanaryEvaluation", "SideReading", "canary_evaluate"]

Answer = Literal["recovered", "not_recovered", "inconclusive"]
INSTANT_STEP_SECONDS = 60.0  # one point: the step only has to be positive
NEXT_STEP = {
    "recovered": "Document the evidence: put these figures, with their sources, in the "
    "incident, then widen the change one scope at a time. FleetScope applies nothing.",
    "not_recovered": "Rollback / isolate: roll the canary back (or take it out of the "
    "router) and return to the triage walk; this change did not fix the breach.",
}


@dataclass(frozen=True)
class SideReading:
    """One side (canary or control): its instances and the figures read for them."""

    role: Literal["canary", "control"]
    instances: tuple[str, ...]
    good: Figure  # value None when only an interval is known: see good_lower/good_upper
    good_lower: float | None
    good_upper: float | None
    requests: Figure
    error_ratio: Figure
    observations: Figure | None = None  # token gaps, for ITL
    missing: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "instances": list(self.instances),
            "good": self.good.to_dict(),
            "good_lower": self.good_lower,
            "good_upper": self.good_upper,
            "requests": self.requests.to_dict(),
            "error_ratio": self.error_ratio.to_dict(),
            "observations": self.observations.to_dict() if self.observations else None,
            "missing": list(self.missing),
        }


@dataclass(frozen=True)
class CanaryEvaluation:
    answer: Answer
    reason: str
    next_step: str
    fleet: str
    model_name: str | None
    objective: BreachedObjective
    window: tuple[str, str]  # ISO start, end (UTC)
    backend: Backend
    min_requests: int
    canary: SideReading
    control: SideReading
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "reason": self.reason,
            "next_step": self.next_step,
            "fleet": self.fleet,
            "model_name": self.model_name,
            "objective": self.objective.to_dict(),
            "window": {"start": self.window[0], "end": self.window[1]},
            "backend": self.backend,
            "min_requests": self.min_requests,
            "canary": self.canary.to_dict(),
            "control": self.control.to_dict(),
            "notes": list(self.notes),
        }


def _total(result: QueryResult) -> float | None:
    """The sum of every series' last value (one point per series here), None if none."""
    found = [s.values[-1] for s in result.series if s.values and s.values[-1] is not None]
    return float(sum(v for v in found if v is not None)) if found else None


def _bounds(result: QueryResult) -> tuple[float | None, float | None]:
    """(lower, upper) of a FractionBelow: equal when the threshold is a bucket edge."""
    by_bound = {s.labels.get("bound", ""): s.values[-1] for s in result.series if s.values}
    if "upper" in by_bound:
        # No lower series means the threshold is under the first edge: nothing is known
        # to be below it, so the lower bound is 0.
        return by_bound.get("lower", 0.0), by_bound["upper"]
    value = by_bound.get("")
    return value, value


def _pct(value: float | None) -> str:
    return "no value" if value is None else f"{value * 100:.4g}%"


def _read_side(
    role: Literal["canary", "control"],
    fleet: Fleet,
    model_name: str | None,
    instances: tuple[str, ...],
    objective: BreachedObjective,
    window: Window,
    backend: Backend,
) -> SideReading:
    seconds = (window.end - window.start).total_seconds() or window.step_seconds
    span = window.end.isoformat().replace("+00:00", "Z")
    store = "embedded store" if backend == "local" else "Prometheus"
    specs: dict[str, Spec] = {
        "finishes": Increase(SUCCESS_KEY, by=("finished_reason",), window_seconds=seconds)
    }
    if objective.threshold_seconds is not None:
        specs["good"] = FractionBelow(objective.key, objective.threshold_seconds,
                                      window_seconds=seconds)  # fmt: skip
        specs["observations"] = Increase(objective.key, window_seconds=seconds)
    if objective.kind == "itl":
        # ITL observes token gaps; each finished request observes E2E once.
        specs["requests"] = Increase("e2e", window_seconds=seconds)
    instant = Window(window.end, window.end, INSTANT_STEP_SECONDS)
    results = run_queries(specs, scope=Scope(fleet, model_name, instances), window=instant,
                          backend=backend)  # fmt: skip

    def source(name: str, what: str) -> str:
        result = results[name]
        metric = result.resolved_name or "(not exposed)"
        return f"{what} of {metric} over the {seconds:g} s ending {span}, {store}"

    missing = tuple(
        f"{name}: {r.message or r.reason}" for name, r in results.items() if not r.has_data
    )
    notes = tuple(w for r in results.values() for w in r.warnings)
    finishes = _by_reason(results["finishes"])
    total_finishes = sum(finishes.values()) if finishes else None
    bad = sum(v for reason, v in finishes.items() if reason in objective.bad_finish_reasons)
    errors = bad / total_finishes if total_finishes else None
    reasons = ",".join(objective.bad_finish_reasons)
    finish_source = source("finishes", f"increase by finished_reason (bad: {reasons})")
    observations: Figure | None = None
    if objective.threshold_seconds is not None:
        lower, upper = _bounds(results["good"])
        observed = _total(results["observations"])
        requests = _total(results["requests"]) if "requests" in results else observed
        requests_source = source("requests" if "requests" in results else "observations",
                                 "increase (observations counted)")  # fmt: skip
        good_source = source(
            "good", f"fraction of observations <= {objective.threshold_seconds:g} s"
        )
        if objective.kind == "itl":
            observations = Figure("token_gaps", "observations", observed, requests=requests,
                                  source=source("observations", "increase (observations counted)"),
                                  replicas=instances)  # fmt: skip
    else:
        lower = upper = (1.0 - errors) if errors is not None else None
        requests, requests_source, good_source = total_finishes, finish_source, finish_source
    exact = lower is not None and lower == upper
    bound = "" if exact or lower is None or upper is None else (
        f"between {_pct(lower)} and {_pct(upper)}: the threshold is not a bucket edge"
    )  # fmt: skip
    if bound:  # the interval already says the threshold is between edges
        notes = tuple(note for note in notes if "bucket edge" not in note)
    good = Figure("good_fraction", "ratio", lower if exact else None,
                  threshold=f">= {objective.target:g}", source=good_source, requests=requests,
                  replicas=instances, bound="; ".join(p for p in (bound, *notes) if p))  # fmt: skip
    return SideReading(
        role, instances, good, lower, upper,
        Figure("requests", "requests", requests, source=requests_source, requests=requests,
               replicas=instances),
        Figure("error_ratio", "ratio", errors, source=finish_source, requests=total_finishes,
               replicas=instances),
        observations, missing,
    )  # fmt: skip


def _by_reason(result: QueryResult) -> Mapping[str, float]:
    return {
        s.labels.get("finished_reason", ""): s.values[-1]
        for s in result.series
        if s.values and s.values[-1] is not None
    }


def _judge(
    canary: SideReading, control: SideReading, objective: BreachedObjective, min_requests: int
) -> tuple[Answer, str, str]:
    """(answer, reason, next step): not enough evidence first, then the gates."""
    needed = f"keep the canary running until it has {min_requests} requests, then evaluate again"
    if canary.good_lower is None or canary.good_upper is None:
        why = "; ".join(canary.missing) or "no value in the window"
        return "inconclusive", f"The canary's good fraction is missing ({why}).", (
            "Find out why the canary's metrics are missing (the inventory says which), then "
            "evaluate again."
        )  # fmt: skip
    had = canary.requests.value
    if had is None or had < min_requests:
        counted = "no" if had is None else f"{had:.0f}"
        return "inconclusive", (
            f"Too few requests: the canary had {counted} in the window and needs "
            f"{min_requests} to show the change."
        ), needed.capitalize() + "."  # fmt: skip
    target = objective.target
    if canary.good_upper < target:
        return "not_recovered", (
            f"The canary misses the objective: {_pct(canary.good_upper)} at best against a "
            f"target of {_pct(target)}, over {had:.0f} requests."
        ), NEXT_STEP["not_recovered"]  # fmt: skip
    canary_errors, control_errors = canary.error_ratio.value, control.error_ratio.value
    if (
        canary_errors is not None
        and control_errors is not None
        and canary_errors > control_errors + ERROR_MARGIN
    ):
        return "not_recovered", (
            f"The canary's error ratio {_pct(canary_errors)} is above the control's "
            f"{_pct(control_errors)} by more than {ERROR_MARGIN * 100:g} pp."
        ), NEXT_STEP["not_recovered"]  # fmt: skip
    if canary.good_lower < target:
        return "inconclusive", (
            f"The canary's good fraction lies between {_pct(canary.good_lower)} and "
            f"{_pct(canary.good_upper)}, which straddles the target {_pct(target)}: the "
            "threshold is not a bucket edge, so the buckets cannot say which side it is on."
        ), (
            "Judge on the nearest bucket edges instead (both bounds are shown), or set the "
            "objective's threshold on a bucket edge."
        )  # fmt: skip
    if canary_errors is None or control_errors is None:
        side = "canary's" if canary_errors is None else "control's"
        return "inconclusive", (
            f"The objective is met, but the {side} error ratio is missing, so the error "
            "gate cannot be checked."
        ), "Check request_success on both sides, then evaluate again."  # fmt: skip
    return "recovered", (
        f"The canary meets the objective ({_pct(canary.good_lower)} or better against "
        f"{_pct(target)} over {had:.0f} requests) and its error ratio "
        f"{_pct(canary_errors)} is within {ERROR_MARGIN * 100:g} pp of the control's "
        f"{_pct(control_errors)}."
    ), NEXT_STEP["recovered"]  # fmt: skip


def canary_evaluate(
    *,
    fleet: Fleet,
    model_name: str | None,
    canary_instances: tuple[str, ...] | list[str],
    control_instances: tuple[str, ...] | list[str],
    objective: BreachedObjective,
    start: datetime,
    end: datetime,
    backend: Backend,
    min_requests: int,
) -> CanaryEvaluation:
    """Canary against control over [start, end] on `objective`; every figure says its
    metric, window, backend and the requests it rests on."""
    canary_set, control_set = tuple(canary_instances), tuple(control_instances)
    if not canary_set or not control_set:
        raise ValueError("canary_evaluate: name at least one canary and one control instance")
    if set(canary_set) & set(control_set):
        raise ValueError("canary_evaluate: an instance cannot be both canary and control")
    window = Window(start, end, INSTANT_STEP_SECONDS)  # checks both are aware, end >= start
    if not window.end > window.start:
        raise ValueError("canary_evaluate: end must be after start")
    canary = _read_side("canary", fleet, model_name, canary_set, objective, window, backend)
    control = _read_side("control", fleet, model_name, control_set, objective, window, backend)
    answer, reason, next_step = _judge(canary, control, objective, max(1, min_requests))
    notes: list[str] = []
    if control.good_lower is not None and control.good_lower >= objective.target:
        notes.append(
            "The control meets the objective too over this window: the breach may have "
            "passed on its own, so the canary alone does not show the change fixed it."
        )
    if control.missing:
        notes.append("Control figures missing: " + "; ".join(control.missing))
    notes.append(f"Control good fraction: {_pct(control.good_lower)}" + (
        f" to {_pct(control.good_upper)}" if control.good_upper != control.good_lower else ""
    ))  # fmt: skip
    iso = (window.start.isoformat().replace("+00:00", "Z"),
           window.end.isoformat().replace("+00:00", "Z"))  # fmt: skip
    return CanaryEvaluation(
        answer, reason, next_step, fleet.slug, model_name, objective, iso, backend,
        max(1, min_requests), canary, control, tuple(notes),
    )  # fmt: skip
