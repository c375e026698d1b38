"""Availability, quality and inventory: replicas down, retries, gateway errors, a bad
artifact seen only by the prober, and a replica speaking another vLLM version."""

from __future__ import annotations

from triage.walk.checks.base import Context, Outcome
from triage.walk.evidence import Stat
from triage.walk.thresholds import THRESHOLDS
from triage.walk.types import Figure

MIN_PROBES = 10.0  # golden-set checks in a window below which the prober decides nothing


def _share(stats: dict[str, Stat], bad: set[str], when: str) -> tuple[float | None, float]:
    pick = (lambda s: s.value) if when == "window" else (lambda s: s.baseline)
    total = sum(pick(s) or 0.0 for s in stats.values())
    wrong = sum(pick(s) or 0.0 for key, s in stats.items() if key in bad)
    return (wrong / total if total > 0 else None), total


def availability(ctx: Context) -> Outcome:
    ev = ctx.ev
    down = sorted(i for i, share in ev.down_share.items() if share > 0)
    figures = [
        Figure(
            "missed_scrape_share",
            "ratio",
            ev.down_share[i],
            threshold="> 0",
            source=f"share of the window's grid with no "
            f"samples from the replica, {ctx.window_text}, {ev.backend}",
            replicas=(i,),
        )
        for i in down
    ]
    errors, errors_held = error_share_figure(ctx)
    sent, amplified = amplification_figure(ctx)
    if not down and not errors_held and not amplified:
        return Outcome(
            "ruled_out",
            "every replica answered its scrapes and the gateway's errors held",
            tuple(figures),
        )
    # Say which of the three signals held: the on-call reads this line first.
    held = [f"{', '.join(down)} missed scrapes"] if down else []
    if errors_held:
        figures.append(errors)
        held.append(
            f"the gateway's 4xx+5xx share rose to {_percent(errors.value)} "
            f"from {_percent(errors.baseline)}"
        )
    if amplified:
        figures.append(sent)
        held.append(
            f"the gateway sent {sent.value:.2f} requests per finished request "
            f"(baseline {sent.baseline:.2f}): requests wait or are resent"
        )
    return Outcome("supported", "; ".join(held), tuple(figures), tuple(down), confidence=0.8)


def _percent(share: float | None) -> str:
    return "unknown" if share is None else f"{share:.1%}"


def replica_down(ctx: Context) -> Outcome:
    ev = ctx.ev
    t = THRESHOLDS["down_share"]
    down = sorted(i for i, share in ev.down_share.items() if share >= t.delta)
    figures = tuple(
        Figure(
            "missed_scrape_share",
            "ratio",
            share,
            threshold=t.text(),
            source=f"grid points with no samples, {ctx.window_text}, {ev.backend}",
            replicas=(i,),
        )
        for i, share in sorted(ev.down_share.items())
        if share > 0
    )
    if not down:
        brief = [i for i, share in ev.down_share.items() if 0 < share < t.delta]
        reason = (
            f"{', '.join(sorted(brief))} missed scrapes briefly and came back (a restart)"
            if brief
            else "every replica answered"
        )
        return Outcome("ruled_out", reason, figures)
    return Outcome(
        "supported",
        f"{', '.join(down)} down for most of the window",
        figures,
        tuple(down),
        confidence=0.95,
    )


def _amplification(ctx: Context, when: str) -> float | None:
    ev = ctx.ev
    gateway = ev.fleet_stats.get("gateway_requests", {})
    pick = (lambda s: s.value) if when == "window" else (lambda s: s.baseline)
    sent = sum(pick(s) or 0.0 for s in gateway.values())
    finished = sum(pick(s) or 0.0 for s in ev.stats.get("request_rate", {}).values())
    return sent / finished if finished > 0 and sent > 0 else None


def retry_storm(ctx: Context) -> Outcome:
    ev = ctx.ev
    if "gateway_requests" in ev.missing:
        return Outcome(
            "insufficient",
            "no gateway in the fleet: retries cannot be seen",
            missing=(ev.missing["gateway_requests"],),
        )
    figures, retried = _retries(ctx)
    if not retried:
        return Outcome("ruled_out", "the gateway is not resending requests", figures)
    loaded = ctx.supported("ttft")
    if not loaded:
        # Retries while the engines keep up are the clients answering the gateway's own
        # failures; a storm is retries that build the engines' queue.
        return Outcome(
            "ruled_out",
            "retries rose but the engines' TTFT held: they follow gateway errors, not a storm",
            figures,
        )
    return Outcome(
        "supported",
        f"retries rose and the engines queue on {', '.join(loaded)}: retries amplify the load",
        figures,
        loaded,
        confidence=0.8,
    )


def _retries(ctx: Context) -> tuple[tuple[Figure, ...], bool]:
    """Retries from the gateway's own counter when it has one, else requests per finished
    request (a gateway without a retry counter still shows the amplification)."""
    ev = ctx.ev
    retries = ev.fleet_stats.get("gateway_retries", {})
    if "gateway_retries" not in ev.missing and retries:
        now = sum(s.value or 0.0 for s in retries.values())
        before = sum(s.baseline or 0.0 for s in retries.values())
        t = THRESHOLDS["retry_rate"]
        source = ev.sources.get("gateway_retries", "gateway retries")
        figure = Figure(
            "gateway_retry_rate",
            "requests_per_second",
            now,
            before,
            threshold=t.text(),
            source=f"rate of {source}, {ctx.window_text}, {ev.backend}",
        )
        return (figure,), t.holds(now, before)
    figure, held = amplification_figure(ctx, why=" (the gateway has no retry counter)")
    return (figure,), held


def amplification_figure(ctx: Context, *, why: str = "") -> tuple[Figure, bool]:
    """Gateway requests per request the engines finished, and whether it rose past its
    threshold: retries, or requests the engines are holding. `why` says why the figure is
    read, for its source."""
    t = THRESHOLDS["gateway_amplification"]
    sent, usual = _amplification(ctx, "window"), _amplification(ctx, "baseline")
    figure = Figure(
        "gateway_requests_per_finished_request",
        "ratio",
        sent,
        usual,
        threshold=t.text(),
        source=f"gateway requests / engine finished requests{why}, {ctx.window_text}, "
        f"{ctx.ev.backend}",
    )
    return figure, t.holds(sent, usual)


def error_share_figure(ctx: Context) -> tuple[Figure, bool]:
    """The gateway's 4xx+5xx share of requests, and whether it rose past its threshold."""
    t = THRESHOLDS["gateway_error_share"]
    gateway = ctx.ev.fleet_stats.get("gateway_requests", {})
    now, _ = _share(gateway, {"4xx", "5xx"}, "window")
    before, _ = _share(gateway, {"4xx", "5xx"}, "baseline")
    figure = Figure(
        "gateway_error_share",
        "ratio",
        now,
        before,
        threshold=t.text(),
        source=f"gateway 4xx+5xx / all, {ctx.window_text}, {ctx.ev.backend}",
    )
    return figure, t.holds(now, before)


def gateway_errors(ctx: Context) -> Outcome:
    ev = ctx.ev
    if "gateway_requests" in ev.missing:
        return Outcome(
            "insufficient", "no gateway in the fleet", missing=(ev.missing["gateway_requests"],)
        )
    figure, held = error_share_figure(ctx)
    if not held:
        return Outcome("ruled_out", "the gateway's error share held", (figure,))
    engines = [side for side in ("ttft", "tpot", "availability.replica_down") if ctx.holds(side)]
    if (
        engines
        or ctx.found.get("availability.retry_storm", Outcome("ruled_out", "")).verdict
        == "supported"
    ):
        return Outcome(
            "ruled_out",
            f"the engines are not healthy ({', '.join(engines) or 'retries'}"
            "): gateway errors follow from them",
            (figure,),
        )
    return Outcome(
        "supported",
        "the gateway fails requests while the engines are healthy",
        (figure,),
        confidence=0.85,
    )


def quality(ctx: Context) -> Outcome:
    ev = ctx.ev
    if "prober_checks" in ev.missing:
        return Outcome(
            "insufficient",
            "no golden-set prober: quality unverified",
            missing=(ev.missing["prober_checks"],),
        )
    checks = ev.fleet_stats.get("prober_checks", {})
    seconds = (ev.window[1] - ev.window[0]).total_seconds()
    now, rate = _share(checks, {"fail"}, "window")
    before, _ = _share(checks, {"fail"}, "baseline")
    t = THRESHOLDS["prober_fail_share"]
    figure = Figure(
        "prober_fail_share",
        "ratio",
        now,
        before,
        threshold=t.text(),
        source=f"golden-set checks failed / all, {ctx.window_text}, {ev.backend}",
        requests=rate * seconds,
    )
    if rate * seconds < MIN_PROBES:
        return Outcome(
            "insufficient",
            f"only {rate * seconds:.0f} golden-set checks in the window",
            (figure,),
            missing=(f"{MIN_PROBES:g}+ prober checks",),
        )
    if not t.holds(now, before):
        return Outcome("ruled_out", "the golden set passes as before", (figure,))
    return Outcome("supported", "the golden set fails more", (figure,), confidence=0.8)


def artifact_regression(ctx: Context) -> Outcome:
    found = ctx.found.get("quality")
    if found is None or found.verdict != "supported":
        return Outcome(
            found.verdict if found else "ruled_out",
            found.reason if found else "quality not breached",
            missing=found.missing if found else (),
        )
    busy = [side for side in ("ttft", "tpot", "availability") if ctx.holds(side)]
    if busy:
        return Outcome(
            "ruled_out",
            f"latency or availability moved too ({', '.join(busy)}): "
            "failures may be timeouts, not a worse model",
            found.figures,
        )
    return Outcome(
        "supported",
        "answers got worse with latency and errors unchanged",
        found.figures,
        confidence=0.8,
    )


def version_skew(ctx: Context) -> Outcome:
    skewed = sorted({c.instance for c in ctx.changes if c.kind == "dialect"})
    notes = tuple(
        Figure("dialect_change", "none", None, source=c.description, replicas=(c.instance,))
        for c in ctx.changes
        if c.kind == "dialect"
    )
    if not skewed:
        return Outcome("ruled_out", "no replica changed its vLLM dialect in the window", notes)
    return Outcome(
        "supported",
        f"{', '.join(skewed)} changed vLLM dialect",
        notes,
        tuple(skewed),
        confidence=0.9,
    )
