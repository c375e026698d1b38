"""Each SLO of a fleet evaluated at one instant: attainment, budget, burn, goodput, state.

One batch of queries per selector reads every source the SLOs name (see `reads`); the
figures are then computed here from the counts, so twenty SLOs on one fleet cost the
queries of their distinct sources, not twenty times the replicas.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from inventory.models import Fleet
from queries import Backend
from slo.burn_policy import DAY_SECONDS
from slo.evaluation.attainment import (
    events_of,
    latency_attainment,
    latency_reason,
    success_attainment,
)
from slo.evaluation.burn import (
    budget_remaining,
    burn_rows,
    exhaustion_seconds,
    slow_rule,
    window_burn,
)
from slo.evaluation.figures import (
    STATE_ORDER,
    Goodput,
    HourlyAttainment,
    Interval,
    ObjectiveStatus,
    Provenance,
    ReplicaAttainment,
    ReplicaGoodRate,
    SloStatus,
    State,
    duration_text,
    verdict_of,
)
from slo.evaluation.goodput import ERROR_REASON, goodput, joint_bounds, mu_good
from slo.evaluation.reads import (
    Counts,
    Reading,
    Source,
    SourceCounts,
    Span,
    first_sample,
    held_span,
    read_selector,
)
from slo.models import Objective, Slo
from slo.objectives import OBJECTIVE_KINDS

SUCCESS_KEY = "request_success"
OUTPUT_TOKENS_KEY = "generation_tokens"


@dataclass(frozen=True)
class _Objective:
    """An objective with what evaluating it needs."""

    objective: Objective
    source: Source

    @property
    def kind(self) -> str:
        return self.objective.kind


def _source(slo: Slo, key: str) -> Source:
    return Source(key, slo.model_name, tuple(sorted(slo.instances or ())))


def _attainment(
    item: _Objective, slo: Slo, counts: Counts | None
) -> tuple[Interval | None, float | None, float | None]:
    """(attainment, shared edge below, shared edge above) of one objective on counts."""
    threshold = item.objective.threshold_seconds
    if threshold is None:
        return success_attainment(counts, slo.bad_finish_reasons), None, None
    return latency_attainment(counts, threshold)


def slo_statuses(
    fleet: Fleet,
    *,
    backend: Backend,
    at: datetime | None = None,
    slos: Sequence[Slo] | None = None,
    replica_rates: bool = False,
) -> list[SloStatus]:
    """Every SLO of the fleet (or `slos`), lowest budget remaining first. `replica_rates`
    adds each replica's mu_good (an hour-by-hour read per replica: the detail page and
    capacity want it, the list does not)."""
    if slos is None:
        slos = list(fleet.slos.prefetch_related("objectives"))
    at = _instant(at)
    by_selector: dict[tuple[str, tuple[str, ...]], list[Slo]] = {}
    for slo in slos:
        by_selector.setdefault((slo.model_name, _instances(slo)), []).append(slo)
    found: list[SloStatus] = []
    for group in by_selector.values():
        found.extend(_evaluate(fleet, group, backend=backend, at=at, replica_rates=replica_rates))
    return sorted(found, key=_sort_key)


def slo_status(
    slo: Slo, *, backend: Backend, at: datetime | None = None, replica_rates: bool = False
) -> SloStatus:
    return slo_statuses(slo.fleet, backend=backend, at=at, slos=[slo], replica_rates=replica_rates)[
        0
    ]


def _instances(slo: Slo) -> tuple[str, ...]:
    return tuple(sorted(slo.instances or ()))


def _instant(at: datetime | None) -> datetime:
    at = at or datetime.now(UTC)
    if at.tzinfo is None:
        raise ValueError("at must be timezone-aware (UTC)")
    at = at.astimezone(UTC)
    return at.replace(second=0, microsecond=0)


def _sort_key(status: SloStatus) -> tuple[float, int, str]:
    remaining = status.budget_remaining.lower if status.budget_remaining else math.inf
    return (remaining, STATE_ORDER.index(status.state), status.name)


def _evaluate(
    fleet: Fleet, slos: list[Slo], *, backend: Backend, at: datetime, replica_rates: bool
) -> list[SloStatus]:
    """The SLOs of one selector: one batch of queries for all of them."""
    items = {
        slo.pk: [
            _Objective(o, _source(slo, OBJECTIVE_KINDS[o.kind].key)) for o in slo.objectives.all()
        ]
        for slo in slos
    }
    extra = {_source(slo, key) for slo in slos for key in (SUCCESS_KEY, OUTPUT_TOKENS_KEY)}
    sources = list(dict.fromkeys([i.source for group in items.values() for i in group]))
    sources += [s for s in extra if s not in sources]
    first = first_sample(fleet, _instances(slos[0])) if backend == "local" else None
    spans = {
        slo.pk: held_span(backend=backend, at=at, window_days=slo.window_days, first=first)
        for slo in slos
    }
    reading = Reading(at, frozenset(sp.held_seconds for sp in spans.values()), replica_rates)
    counts = read_selector(fleet, sources, backend=backend, reading=reading)
    return [
        _slo_status(slo, items[slo.pk], counts, span=spans[slo.pk], backend=backend) for slo in slos
    ]


def _slo_status(
    slo: Slo, items: list[_Objective], counts: dict[Source, SourceCounts], *, span: Span,
    backend: Backend,
) -> SloStatus:  # fmt: skip
    finishes = counts.get(_source(slo, SUCCESS_KEY))
    objectives = tuple(_objective_status(slo, item, counts[item.source], span, backend, finishes)
                       for item in items)  # fmt: skip
    with_data = [o for o in objectives if o.state != "no-data"]
    state: State = min((o.state for o in with_data), key=STATE_ORDER.index, default="no-data")
    budgets = [(o.budget_remaining.lower, o) for o in with_data if o.budget_remaining is not None]
    worst = min(budgets, key=lambda pair: pair[0], default=(0.0, None))[1]
    notes = []
    if not objectives:
        notes.append("this SLO has no objectives")
    return SloStatus(
        slo_id=slo.pk,
        fleet=slo.fleet.slug,
        slug=slo.slug,
        name=slo.name,
        window_days=slo.window_days,
        held_seconds=span.held_seconds,
        window_note=span.note,
        backend=backend,
        at=span.at.timestamp(),
        state=state,
        objectives=objectives,
        goodput=_goodput(slo, items, objectives, counts, span),
        budget_remaining=worst.budget_remaining if worst else None,
        worst_objective=worst.kind if worst else None,
        owner=slo.owner,
        runbook_url=slo.runbook_url,
        notes=tuple(notes),
    )


def _objective_status(
    slo: Slo, item: _Objective, source: SourceCounts, span: Span, backend: Backend,
    finishes: SourceCounts | None,
) -> ObjectiveStatus:  # fmt: skip
    """`finishes`: the selector's request_success counts, the request guard of objectives
    whose events are not requests."""
    objective = item.objective
    info = OBJECTIVE_KINDS[objective.kind]
    target = objective.target
    names = tuple(source.resolved.names) if source.resolved else ()
    provenance_notes = [*source.warnings, *source.errors]
    if span.held_seconds < span.window_seconds:
        provenance_notes.insert(0, span.note)

    held = span.held_seconds

    def read(seconds: float) -> tuple[Interval | None, float | None]:
        window = source.windows.get(min(seconds, held))
        return _attainment(item, slo, window)[0], events_of(window)

    whole = source.windows.get(held)
    attainment, below, above = _attainment(item, slo, whole)
    events = events_of(whole)
    edges: tuple[float, ...] = ()
    if objective.threshold_seconds is not None and source.resolved is not None:
        reason = latency_reason(objective.threshold_seconds, below, above,
                                source.resolved.edges_by_instance)  # fmt: skip
        edges = tuple(
            dict.fromkeys(e for e in (below, above) if e is not None and math.isfinite(e))
        )
    elif attainment is not None:
        bad = ", ".join(slo.bad_finish_reasons)
        reason = f"exact: finishes with reason {bad} count as bad"
    else:
        reason = ""
    start = span.at - timedelta(seconds=span.held_seconds)
    window_text = (
        f"{start.strftime('%Y-%m-%d %H:%MZ')} .. {span.at.strftime('%Y-%m-%d %H:%MZ')} "
        f"({duration_text(span.held_seconds)})"
    )
    queries = tuple(dict.fromkeys(source.queries))
    provenance = Provenance(
        backend, window_text, names, edges, events, queries, tuple(provenance_notes)
    )
    if source.resolved is None or attainment is None or events is None:
        # A failed read is not an idle fleet: say which it was.
        why = (
            source.unavailable
            or "; ".join(source.errors)
            or "no events in the window: no data, not 0% or 100%"
        )
        return ObjectiveStatus(
            objective.kind, info.label, objective.threshold_seconds, target, info.events,
            None, "no-data", why, events, None, None, None, "no-data", (), None, (),
            _hourly(item, slo, source, target, held), provenance, unavailable=why,
        )  # fmt: skip
    budget = budget_remaining(attainment, target)
    requests = None
    if not info.per_request and finishes is not None:

        def requests(seconds: float) -> float | None:
            return events_of(finishes.windows.get(min(seconds, held)))

    rows = burn_rows(read, target=target, window_days=slo.window_days,
                     min_requests=slo.min_requests_to_page, held_seconds=span.held_seconds,
                     requests=requests)  # fmt: skip
    slow = slow_rule(read, target=target, window_days=slo.window_days,
                     min_bad_events=slo.min_bad_events)  # fmt: skip
    day = window_burn(DAY_SECONDS, read, target)
    verdict = verdict_of(attainment, target)
    return ObjectiveStatus(
        kind=objective.kind,
        label=info.label,
        threshold_seconds=objective.threshold_seconds,
        target=target,
        events_name=info.events,
        attainment=attainment,
        verdict=verdict,
        reason=reason,
        events=events,
        bad_events=Interval(1 - attainment.upper, 1 - attainment.lower).scaled(events),
        budget_remaining=budget,
        exhaustion_seconds=exhaustion_seconds(budget, day, slo.window_days),
        state=_state(budget, rows, slow, verdict),
        burn=rows,
        slow=slow,
        replicas=_replicas(item, slo, source.per_instance.get(held, {}), target),
        hourly=_hourly(item, slo, source, target, held),
        provenance=provenance,
    )


def _state(budget: Interval, rows: Sequence, slow: object, verdict: str) -> State:
    firing = {(row.severity, row.firing) for row in rows}
    if budget.upper <= 0:
        return "exhausted"
    if ("page", "firing") in firing:
        return "burning"
    if ("ticket", "firing") in firing or getattr(slow, "firing", "") == "firing":
        return "at-risk"
    if verdict == "undecided" or any(f == "maybe" for _, f in firing):
        return "undecided"
    return "ok"


def _replicas(
    item: _Objective, slo: Slo, per_instance: dict[str, Counts], target: float
) -> tuple[ReplicaAttainment, ...]:
    found = []
    for instance, counts in per_instance.items():
        attainment = _attainment(item, slo, counts)[0]
        found.append(ReplicaAttainment(instance, attainment, events_of(counts) or 0.0,
                                       verdict_of(attainment, target)))  # fmt: skip
    # Worst first, so one bad replica inside a healthy fleet figure is the first row.
    return tuple(sorted(found, key=lambda r: (r.attainment.lower if r.attainment else 2.0,
                                              r.instance)))  # fmt: skip


def _hourly(
    item: _Objective, slo: Slo, source: SourceCounts, target: float, held: float
) -> HourlyAttainment | None:
    """Hour by hour over the SLO's own held window (the batch read the longest)."""
    hours = int(held // 3600)
    if not source.hourly or not hours:
        return None
    stamps, lower, upper, events, b_low, b_high = [], [], [], [], [], []
    total: dict = {}
    for stamp, counts in source.hourly[-hours:]:
        attainment = _attainment(item, slo, counts)[0]
        stamps.append(stamp)
        lower.append(attainment.lower if attainment else None)
        upper.append(attainment.upper if attainment else None)
        events.append(events_of(counts))
        for key, value in (counts or {}).items():
            total[key] = total.get(key, 0.0) + value
        so_far = _attainment(item, slo, total)[0]
        budget = budget_remaining(so_far, target) if so_far else None
        b_low.append(budget.lower if budget else None)
        b_high.append(budget.upper if budget else None)
    return HourlyAttainment(tuple(stamps), tuple(lower), tuple(upper), tuple(events),
                            tuple(b_low), tuple(b_high))  # fmt: skip


def _goodput(
    slo: Slo, items: list[_Objective], objectives: tuple[ObjectiveStatus, ...],
    counts: dict[Source, SourceCounts], span: Span,
) -> Goodput:  # fmt: skip
    success = counts.get(_source(slo, SUCCESS_KEY))
    tokens = counts.get(_source(slo, OUTPUT_TOKENS_KEY))
    finished_counts = success.windows.get(span.held_seconds) if success else None
    finished = events_of(finished_counts)
    errors = (finished_counts or {}).get(ERROR_REASON)
    fractions = {}
    left_out = []
    for status in objectives:
        if not OBJECTIVE_KINDS[status.kind].per_request:
            left_out.append(f"{status.kind}: counts token gaps, not requests")
        elif status.attainment is not None and status.events:
            fractions[status.kind] = (status.attainment, status.events)
        else:
            left_out.append(f"{status.kind}: no data")
    output = None
    if tokens is not None:
        output = _total(tokens.windows.get(span.held_seconds))
    per_replica = _mu_good(slo, items, counts, success)
    return goodput(fractions, left_out=left_out, finished=finished, errors=errors,
                   output_tokens=output, seconds=span.held_seconds,
                   replicas=per_replica)  # fmt: skip


def _total(counts: Counts | None) -> float | None:
    if not counts:
        return None
    return float(sum(counts.values()))


def _mu_good(
    slo: Slo, items: list[_Objective], counts: dict[Source, SourceCounts],
    success: SourceCounts | None,
) -> tuple[ReplicaGoodRate, ...]:  # fmt: skip
    if success is None or not success.hourly_per_instance:
        return ()
    per_request = [i for i in items if OBJECTIVE_KINDS[i.kind].per_request]
    found = []
    for instance, hours in sorted(success.hourly_per_instance.items()):
        rows = []
        for stamp, finished_counts in hours:
            finished = events_of(finished_counts) or 0.0
            parts, held = [], True
            for item in per_request:
                source = counts[item.source]
                hour = dict(source.hourly_per_instance.get(instance, [])).get(stamp)
                attainment = _attainment(item, slo, hour)[0]
                if attainment is None:
                    held = False
                    continue
                held = held and attainment.lower >= item.objective.target
                events = events_of(hour) or 0.0
                share = min(1.0, events / finished) if finished else 1.0
                parts.append(Interval(attainment.lower * share, attainment.upper * share))
            good = joint_bounds(parts).lower * finished if parts else 0.0
            rows.append((stamp, finished, good, held and bool(parts)))
        found.append(mu_good(instance, rows))
    return tuple(found)
