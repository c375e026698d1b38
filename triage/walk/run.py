"""`walk_fleet`: read the evidence once, evaluate every node of the tree in order, and
assemble the walk (breach, verdicts, what changed, workload shifts, one canary plan).

A child is evaluated only when its parent is supported; otherwise it inherits the
parent's verdict ("ruled out: TTFT not breached", or "insufficient: needs X"), so the
walk never names a cause under a branch whose own evidence is missing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from inventory.models import Fleet
from inventory.selectors import scope_endpoints
from inventory.store import store_span
from queries import Backend
from triage.canary import canary_plan
from triage.walk.checks import CHECKS, Context, Outcome
from triage.walk.evidence import Evidence, evidence_read, windows_for
from triage.walk.objective import SIDE_OF_KIND, SloReading, breached_objective, slo_readings
from triage.walk.specs import GPU_SPECS, SERIES_SPECS
from triage.walk.thresholds import threshold_table
from triage.walk.tree import NODES, Node
from triage.walk.types import Breach, Change, Chart, Figure, NodeResult, Side, Walk

DEFAULT_SINCE = timedelta(minutes=30)
BASELINE_SPAN = timedelta(hours=1)
SIDES: tuple[Side, ...] = ("availability", "ttft", "tpot", "quality", "inventory")
# Nodes whose verdicts other checks read come first (version skew explains a cold restart).
FIRST = (
    "inventory",
    "inventory.version_skew",
    # A replica that is down, or a GPU or link that slows everything, explains the TTFT rise
    # on the replicas it touches, so these are read before the TTFT branch.
    "availability",
    "availability.replica_down",
    "tpot",
    "tpot.straggler",
    "tpot.straggler.gpu_throttle",
    "tpot.collective",
    # Longer prompts explain a full KV cache, so the prefill branch is read before the queue.
    "ttft",
    # Retries explain arrivals that look like load.
    "availability.retry_storm",
    "ttft.prefill",
    "ttft.prefill.long_prompts",
    "ttft.prefill.cache_miss",
)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _held_from(fleet: Fleet, backend: Backend) -> datetime | None:
    if backend == "prometheus":
        return None
    held = store_span([e.endpoint_id for e in scope_endpoints(fleet=fleet)])
    return None if held is None else held[0].astimezone(UTC)


DAY = timedelta(days=1)


def _day_before_unread(window: tuple[datetime, datetime], held: datetime | None) -> str:
    """ "" when the same window a day earlier is worth reading, else why not. Prometheus'
    retention is not known here: it is asked, and says by its answer."""
    if held is not None and held > window[0] - DAY:
        return (
            "the same window a day earlier: not read, the embedded store holds data only "
            f"from {_iso(held)}"
        )
    return ""


# The order charts are shown in: what on-call reads first (latency, then the queue and the
# cache, then the GPUs).
CHART_ORDER = (
    "ttft_trend",
    "itl_trend",
    "waiting",
    "waiting_capacity",
    "waiting_deferred",
    "running",
    "kv_usage",
    "prefix_trend",
    "prefix_hit_rate",
    "sm_clock",
    "power",
    "pcie_tx",
    "xid",
)


def _charts(ev: Evidence) -> tuple[Chart, ...]:
    """The series behind the figures, each on one grid (the union of its series' times)."""
    charts = []
    for name in CHART_ORDER:
        read = ev.charts.get(name)
        if not read:
            continue
        grid = sorted({t for stamps, _ in read.values() for t in stamps})
        series = []
        for replica in sorted(read):
            at = dict(zip(*read[replica], strict=True))
            series.append((replica, tuple(at.get(t) for t in grid)))
        unit, text = {**SERIES_SPECS, **GPU_SPECS}[name]
        metric = ev.sources.get(name, "")
        source = text + (f" ({metric})" if metric else "")
        charts.append(Chart(name, unit, source, tuple(grid), tuple(series)))
    return tuple(charts)


def _ordered() -> list[Node]:
    first = [n for f in FIRST for n in NODES if n.id == f]
    return first + [n for n in NODES if n.id not in FIRST and n.id != "healthy"]


def _evaluate(ctx: Context) -> dict[str, Outcome]:
    for node in _ordered():
        parent = ctx.found.get(node.parent) if node.parent else None
        if parent is not None and parent.verdict != "supported" and node.id not in CHILD_OWN:
            word = "ruled out" if parent.verdict == "ruled_out" else "without evidence"
            ctx.found[node.id] = Outcome(
                parent.verdict, f"not read: {node.parent} is {word}", missing=parent.missing
            )
            continue
        ctx.found[node.id] = CHECKS[node.id](ctx)
    breached = [side for side in SIDES if ctx.found[side].verdict == "supported"]
    # A fleet without a prober is "quality unverified", not a blind walk: only the sides
    # every fleet exposes decide whether "healthy" can be said.
    blind = [s for s in ("availability", "ttft", "tpot") if ctx.found[s].verdict == "insufficient"]
    if breached:
        ctx.found["healthy"] = Outcome("ruled_out", f"breached: {', '.join(breached)}")
    elif blind:
        ctx.found["healthy"] = Outcome(
            "insufficient",
            f"nothing breached that could be read; {', '.join(blind)} could not be read",
            missing=tuple(m for s in blind for m in ctx.found[s].missing),
        )
    else:
        ctx.found["healthy"] = Outcome(
            "supported", "no side breached against its baseline", confidence=0.8
        )
    return ctx.found


# Leaves that read their own evidence whatever their parent says: the gateway and the
# version history are not reached through a breached side.
CHILD_OWN = frozenset({"availability.retry_storm", "availability.gateway_errors"})


def _breach(ctx: Context, readings: list[SloReading] | None, slo: Any) -> Breach:
    found = ctx.found
    sides = [side for side in SIDES if found[side].verdict == "supported"]
    sides.sort(key=lambda s: -found[s].confidence)
    if readings is not None:
        return _slo_breach(ctx, readings, slo, sides)
    if not sides:
        healthy = found["healthy"]
        text = (
            "no breach: every side is within its thresholds of its baseline"
            if healthy.verdict == "supported"
            else healthy.reason
        )
        return Breach("none", False, text, "metric")
    side = sides[0]
    text = "; ".join(f"{s}: {found[s].reason}" for s in sides)
    since = _since(ctx.ev, found[side].replicas) if side == "ttft" else None
    return Breach(side, True, text, "metric", since, found[side].figures, tuple(sides))


def _slo_breach(ctx: Context, readings: list[SloReading], slo: Any, sides: list[Side]) -> Breach:
    """The SLO decides whether there is a breach and on which side; the metric sides
    still say where it shows."""
    figures = tuple(r.figure for r in readings)
    breached = sorted((r for r in readings if r.breached), key=lambda r: (r.upper or 0) - r.target)
    undecided = [r.kind for r in readings if r.undecided]
    source = f"slo:{slo.slug}"
    if not breached:
        text = f"SLO {slo} met in the window"
        if undecided:
            text += f"; undecided ({', '.join(undecided)}: the interval straddles the target)"
        return Breach("none", False, text, source, None, figures)
    slo_sides = tuple(dict.fromkeys(SIDE_OF_KIND[r.kind] for r in breached))
    side = slo_sides[0]
    text = "; ".join(f"{r.kind} good share {r.upper:.4f} < target {r.target:g}" for r in breached)
    since = _since(ctx.ev, ctx.found["ttft"].replicas) if side == "ttft" else None
    return Breach(
        side,
        True,
        f"SLO {slo} breached: {text}",
        source,
        since,
        figures,
        tuple(dict.fromkeys((*slo_sides, *sides))),
    )


def _since(ev: Evidence, instances: tuple[str, ...]) -> str | None:
    """The first grid time in the window when an affected replica's TTFT trend passed
    twice its baseline median: when the burn began, not just that it did."""
    first: float | None = None
    for instance in instances:
        trend = ev.trends.get("ttft_trend", {}).get(instance)
        base = ev.stat("ttft_trend", instance).baseline
        if trend is None or base is None:
            continue
        for t, v in zip(*trend, strict=True):
            if t >= ev.window[0].timestamp() and v is not None and v >= 2 * base + 0.05:
                first = t if first is None else min(first, t)
                break
    return None if first is None else _iso(datetime.fromtimestamp(first, UTC))


def _canary(
    fleet: Fleet,
    slo: Any,
    ctx: Context,
    breach: Breach,
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
    backend: Backend,
) -> dict[str, Any] | None:
    """One plan, for the most confident supported leaf, sized on the breached objective."""
    leaves = [
        n for n in NODES if n.leaf and n.id != "healthy" and ctx.found[n.id].verdict == "supported"
    ]
    if not leaves:
        return None
    leaf = max(leaves, key=lambda n: ctx.found[n.id].confidence)
    found = ctx.found[leaf.id]
    side = leaf.id.split(".")[0]
    objective = breached_objective(
        fleet,
        slo=slo,
        side=side,
        replicas=found.replicas,
        window=window,
        baseline=baseline,
        backend=backend,
    )
    models = sorted({m for i in found.replicas if (m := ctx.ev.models.get(i))})
    model = models[0] if models else None
    members = ctx.ev.instances_of(model) if model else []
    rate = sum(ctx.ev.stat("request_rate", i).value or 0.0 for i in members) or None
    node = NodeResult(
        leaf.id,
        leaf.question,
        True,
        found.verdict,
        found.reason,
        found.figures,
        found.confidence,
        found.replicas,
        found.missing,
        leaf.runbook,
        leaf.parent,
    )
    plan = canary_plan(
        leaf.id,
        node=node,
        model_name=model,
        replicas_in_model=len(members),
        request_rate_per_second=rate,
        breached=objective,
        quality_signal="prober_checks" not in ctx.ev.missing,
    )
    if plan is None:
        return None
    return {**plan.to_dict(), "text": plan.text, "yaml": plan.yaml}


def walk_fleet(
    fleet: Fleet,
    *,
    slo: Any = None,
    at: datetime | None = None,
    since: timedelta = DEFAULT_SINCE,
    backend: Backend = "local",
    model_name: str | None = None,
) -> Walk:
    """Walk the tree over `since` before `at` (UTC, default now) against the hour before."""
    from triage.walk.changes import changes_in
    from triage.walk.workload import workload_shifts

    at = (at or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    if slo is not None and not model_name:
        model_name = slo.model_name or None
    held = _held_from(fleet, backend)
    window, baseline, note = windows_for(at, since, BASELINE_SPAN, held)

    def read(backend: Backend, held: datetime | None) -> Evidence:
        return evidence_read(
            fleet,
            model_name=model_name,
            window=window,
            baseline=baseline,
            backend=backend,
            day_before=_day_before_unread(window, held),
        )

    ev = read(backend, held)
    fallback = ""
    if backend == "prometheus" and ev.backend_failed:
        held = _held_from(fleet, "local")
        if held is not None and held <= window[0]:
            fallback = (
                f"Prometheus failed ({ev.backend_failed}): read from the embedded store, "
                "which holds the window"
            )
            backend = "local"
            ev = read(backend, held)
        else:
            fallback = (
                f"Prometheus failed ({ev.backend_failed}) and the embedded store does not "
                "hold the window: nothing could be read"
            )
    changes: tuple[Change, ...] = tuple(
        c
        for c in changes_in(
            fleet, model_name=model_name, start=window[0], end=window[1], backend=backend
        )
    )
    span = f"{_iso(window[0])} .. {_iso(window[1])} vs {_iso(baseline[0])} .. {_iso(baseline[1])}"
    ctx = Context(ev, changes, span)
    found = _evaluate(ctx)
    nodes = tuple(
        NodeResult(
            node.id,
            node.question,
            node.leaf,
            found[node.id].verdict,
            found[node.id].reason,
            found[node.id].figures,
            found[node.id].confidence,
            found[node.id].replicas,
            found[node.id].missing,
            node.runbook,
            node.parent,
        )
        for node in NODES
    )
    shifts = workload_shifts(
        fleet, model_name=model_name, window=window, baseline=baseline, backend=backend
    )
    workload: tuple[Figure, ...] = tuple(s.figure for s in shifts if s.changed)
    notes = tuple(n for n in (fallback, note, ev.day_missing) if n) + tuple(
        f"{name} not read: {why}" for name, why in sorted(ev.missing.items())
    )
    readings = None if slo is None else slo_readings(fleet, slo, window, backend)
    breach = _breach(ctx, readings, slo)
    canary = _canary(fleet, slo, ctx, breach, window, baseline, backend)
    walk = Walk(
        fleet=fleet.slug,
        model_name=model_name,
        backend=backend,
        window=(_iso(window[0]), _iso(window[1])),
        baseline=(_iso(baseline[0]), _iso(baseline[1])),
        breach=breach,
        canary=canary,
        nodes=nodes,
        changes=changes,
        workload=workload,
        queries=ev.queries,
        thresholds=threshold_table(),
        notes=notes,
        day_before=(
            (_iso(ev.day_window[0]), _iso(ev.day_window[1])) if ev.day_window is not None else None
        ),
        charts=_charts(ev),
    )
    return walk
