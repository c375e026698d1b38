"""One SLO's page: each objective in full (attainment, budget, exhaustion, burn rules,
the slow rule, replicas worst first, and its charts) and the goodput it combines."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from queries import QueryResult
from slo import figures
from slo.evaluation import (
    Goodput,
    ObjectiveStatus,
    ReplicaAttainment,
    SloStatus,
    SlowRule,
    WindowBurn,
    duration_text,
)
from slo.models import Slo
from slo.pages.formatting import (
    FIRING_COLOURS,
    FIRING_LABELS,
    MISSING,
    Shown,
    StateShown,
    attainment_shown,
    budget_shown,
    burn_shown,
    count_shown,
    events_shown,
    goodput_rate_shown,
    number,
    objective_title,
    ratio_shown,
    state_shown,
    target_text,
)
from slo.pages.params import Backend
from slo.pages.selectors import latency_quantile

# Replica verdicts, worst first, and their colour class.
VERDICT_ORDER = ("breached", "undecided", "met", "no-data")
VERDICT_COLOURS = {"breached": "bad", "undecided": "warn", "met": "good", "no-data": "none"}


@dataclass(frozen=True)
class WindowShown:
    label: str
    events: Shown
    bad_ratio: Shown
    burn: Shown


@dataclass(frozen=True)
class BurnRowShown:
    pair: str
    severity: str
    factor: str
    long: WindowShown
    short: WindowShown
    firing: str
    firing_label: str
    colour: str
    note: str


def _window_shown(window: WindowBurn, events_name: str) -> WindowShown:
    return WindowShown(
        window.label,
        events_shown(window.events, events_name),
        ratio_shown(window.bad_ratio),
        burn_shown(window.burn),
    )


def burn_rows_shown(objective: ObjectiveStatus) -> list[BurnRowShown]:
    return [
        BurnRowShown(
            pair=row.pair,
            severity=row.severity,
            factor=f"{number(row.factor)}\u00d7",
            long=_window_shown(row.long, objective.events_name),
            short=_window_shown(row.short, objective.events_name),
            firing=row.firing,
            firing_label=FIRING_LABELS[row.firing],
            colour=FIRING_COLOURS[row.firing],
            note=row.note,
        )
        for row in objective.burn
    ]


@dataclass(frozen=True)
class ReplicaShown:
    instance: str
    attainment: Shown
    events: Shown
    verdict: str
    colour: str


def _replica_key(replica: ReplicaAttainment) -> tuple[int, float, str]:
    lower = replica.attainment.lower if replica.attainment is not None else math.inf
    return (VERDICT_ORDER.index(replica.verdict), lower, replica.instance)


def replicas_shown(objective: ObjectiveStatus) -> list[ReplicaShown]:
    """Worst first: breached, then undecided, then met (each lowest attainment first),
    replicas without data last, so one bad replica stands out at the top."""
    return [
        ReplicaShown(
            r.instance,
            ratio_shown(r.attainment),
            events_shown(r.events, objective.events_name),
            r.verdict,
            VERDICT_COLOURS.get(r.verdict, "none"),
        )
        for r in sorted(objective.replicas, key=_replica_key)
    ]


@dataclass(frozen=True)
class SlowShown:
    window_label: str
    bad_events: Shown
    min_bad_events: int
    factor: str
    firing: str
    firing_label: str
    colour: str
    note: str


def slow_shown(slow: SlowRule | None) -> SlowShown | None:
    """The low-traffic ticket rule, or None where the objective has none."""
    if slow is None:
        return None
    return SlowShown(
        slow.window_label,
        count_shown(slow.bad_events),
        slow.min_bad_events,
        f"{number(slow.factor)}\u00d7",
        slow.firing,
        FIRING_LABELS[slow.firing],
        FIRING_COLOURS[slow.firing],
        slow.note,
    )


@dataclass(frozen=True)
class ObjectiveView:
    status: ObjectiveStatus
    anchor: str
    title: str
    state: StateShown
    attainment: Shown
    target: str
    budget: Shown
    bad_events: Shown
    events: Shown
    exhaustion: str
    burn: list[BurnRowShown]
    slow: SlowShown | None
    replicas: list[ReplicaShown]
    is_worst: bool
    latency_note: str
    provenance_events: Shown


def exhaustion_text(objective: ObjectiveStatus) -> str:
    if objective.exhaustion_seconds is None:
        return "not at the last day's burn rate"
    if objective.exhaustion_seconds <= 0:
        budget = objective.budget_remaining
        if budget is not None and budget.upper > 0:
            left = budget_shown(budget).text
            return f"possibly already: the budget left is known only to lie in {left}"
        return "already exhausted"
    return f"in {duration_text(objective.exhaustion_seconds)} at the last day's burn rate"


def bad_events_shown(objective: ObjectiveStatus) -> Shown:
    return count_shown(objective.bad_events, f"bad {objective.events_name}")


def objective_view(
    objective: ObjectiveStatus, worst: str | None, latency: str = ""
) -> ObjectiveView:
    return ObjectiveView(
        status=objective,
        anchor=f"objective-{objective.kind}",
        title=objective_title(objective),
        state=state_shown(objective.state),
        attainment=attainment_shown(objective),
        target=target_text(objective.target),
        budget=budget_shown(objective.budget_remaining, objective.unavailable),
        bad_events=bad_events_shown(objective),
        events=events_shown(objective.events, objective.events_name),
        exhaustion=exhaustion_text(objective),
        burn=burn_rows_shown(objective),
        slow=slow_shown(objective.slow),
        replicas=replicas_shown(objective),
        is_worst=worst is not None and worst in (objective.kind, objective.label),
        latency_note=latency,
        provenance_events=events_shown(objective.provenance.events, objective.events_name),
    )


def worst_objective_label(status: SloStatus) -> str | None:
    """The label of the objective that fails most (the evaluation names it by kind or
    label)."""
    if status.worst_objective is None:
        return None
    for objective in status.objectives:
        if status.worst_objective in (objective.kind, objective.label):
            return objective.label
    return status.worst_objective


def latency_note(result: QueryResult | None) -> str:
    """Why the latency chart is missing or incomplete; empty when it is whole."""
    if result is None:
        return ""
    if not result.has_data:
        return result.message or result.reason or "no data"
    return " · ".join(result.warnings)


def detail_objectives(
    slo: Slo, status: SloStatus, *, backend: Backend
) -> tuple[list[ObjectiveView], dict[str, dict[str, Any] | None]]:
    """Each objective as the detail page shows it, and the page's chart figures by id
    (`<anchor>-attainment`, `-budget`, `-latency`; None where there is nothing to draw).
    The latency charts end at the evaluation time."""
    end = datetime.fromtimestamp(status.at, UTC)
    views: list[ObjectiveView] = []
    charts: dict[str, dict[str, Any] | None] = {}
    for objective in status.objectives:
        result = latency_quantile(slo, objective, backend=backend, end=end)
        view = objective_view(objective, status.worst_objective, latency_note(result))
        views.append(view)
        charts[f"{view.anchor}-attainment"] = figures.attainment_figure(objective)
        charts[f"{view.anchor}-budget"] = figures.budget_figure(objective.hourly)
        if objective.threshold_seconds is not None:
            charts[f"{view.anchor}-latency"] = figures.latency_figure(
                result,
                threshold=objective.threshold_seconds,
                quantile_name=f"p{objective.target * 100:g} {objective.label}",
            )
    return views, charts


@dataclass(frozen=True)
class ReplicaRateShown:
    instance: str
    mu_good: Shown
    intervals: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class GoodputView:
    fraction: Shown
    requests_per_second: Shown
    good_tokens_per_second: Shown
    exact: bool
    objectives: tuple[str, ...]
    left_out: tuple[str, ...]
    note: str
    replicas: tuple[ReplicaRateShown, ...]


def goodput_view(goodput: Goodput | None) -> GoodputView | None:
    if goodput is None:
        return None
    replicas = tuple(
        ReplicaRateShown(
            r.instance,
            Shown(f"{number(r.mu_good)} req/s") if r.mu_good is not None else MISSING,
            r.intervals,
            r.note,
        )
        for r in goodput.replicas
    )
    return GoodputView(
        fraction=ratio_shown(goodput.fraction),
        requests_per_second=goodput_rate_shown(goodput.requests_per_second, "req/s"),
        good_tokens_per_second=goodput_rate_shown(
            goodput.good_output_tokens_per_second, "tokens/s"
        ),
        exact=goodput.exact,
        objectives=goodput.objectives,
        left_out=goodput.left_out,
        note=goodput.note,
        replicas=replicas,
    )
