"""The TTFT side's prefill branch: longer prompts, and a cold start after a restart."""

from __future__ import annotations

from collections.abc import Iterable

from triage.walk.checks.base import Context, Outcome, explained_elsewhere, pick
from triage.walk.checks.ttft import by_share, mean_risen
from triage.walk.thresholds import PROMPT_Z, THRESHOLDS
from triage.walk.types import Figure


def ttft_prefill(ctx: Context) -> Outcome:
    found = by_share(ctx, "ttft.prefill", "prefill_mean", "prefill_share")
    longer = _longer_prompts(ctx, mean_risen(ctx, ctx.supported("ttft")))
    if longer:
        # Longer prompts cost prefill and KV blocks alike: even when the rise shows as
        # queueing for blocks, the prompts are the cause to follow.
        replicas = (
            tuple(sorted({*found.replicas, *longer}))
            if found.verdict == "supported"
            else tuple(longer)
        )
        found = Outcome(
            "supported",
            f"prompts got longer on {', '.join(longer)}"
            + (f"; {found.reason}" if found.verdict == "supported" else ""),
            found.figures,
            replicas,
            confidence=0.8,
        )
    restarted = _restarted(ctx, ctx.supported("ttft"))
    if restarted and found.verdict != "supported":
        return Outcome(
            "supported",
            f"replicas restarted in the window: {', '.join(restarted)}",
            found.figures,
            tuple(restarted),
            confidence=0.7,
        )
    if restarted:
        return Outcome(
            "supported",
            found.reason,
            found.figures,
            tuple(sorted({*found.replicas, *restarted})),
            confidence=found.confidence,
        )
    return found


def _restarted(ctx: Context, instances: Iterable[str]) -> list[str]:
    wanted = set(instances)
    return sorted({c.instance for c in ctx.changes if c.kind == "restart" and c.instance in wanted})


def _longer_prompts(ctx: Context, instances: Iterable[str]) -> list[str]:
    ev, t = ctx.ev, THRESHOLDS["prompt_tokens"]

    def longer(i: str) -> bool:
        stat = ev.stat("prompt_mean", i)
        return t.holds(stat.value, stat.baseline) and (prompt_rise_z(ctx, i) or 0) >= PROMPT_Z

    return pick(ctx, instances, longer)


def prompt_rise_z(ctx: Context, instance: str) -> float | None:
    """The prompt-mean rise in standard errors. Prompt lengths are spread about as wide as
    their mean (a coefficient of variation near 1), so the standard error of a window's
    mean is mean / sqrt(requests): a quiet replica's 500 requests move it by 4 % by chance,
    a busy one's 5000 by 1.4 %."""
    ev = ctx.ev
    stat, requests = ev.stat("prompt_mean", instance), ev.stat("requests", instance)
    if None in (stat.value, stat.baseline, requests.value, requests.baseline):
        return None
    assert stat.value is not None and stat.baseline is not None
    if not (requests.value and requests.baseline and stat.baseline > 0):
        return None
    error = stat.baseline * (1 / requests.value + 1 / requests.baseline) ** 0.5
    return (stat.value - stat.baseline) / error


def long_prompts(ctx: Context) -> Outcome:
    ev = ctx.ev
    heavy = [i for i in ctx.supported("ttft.prefill") if i not in _restarted(ctx, ev.models)]
    missing = ctx.needs(("prompt_mean",), heavy)
    if missing:
        return Outcome("insufficient", "prompt lengths are not exposed", missing=missing)
    t = THRESHOLDS["prompt_tokens"]
    hit = _longer_prompts(ctx, heavy)
    figures = tuple(ctx.figure("prompt_mean", i, "prompt_tokens") for i in heavy) + tuple(
        Figure(
            "prompt_rise_standard_errors",
            "standard_errors",
            prompt_rise_z(ctx, i),
            threshold=f">= {PROMPT_Z:g}",
            source="(window mean - baseline mean) / (baseline mean x sqrt(1/n_window + "
            f"1/n_baseline)), prompt lengths, {ctx.window_text}, {ev.backend}",
            requests=ev.stat("requests", i).value,
            replicas=(i,),
        )
        for i in heavy
    )
    cause = explained_elsewhere(ctx, hit)
    if cause:
        return Outcome(
            "ruled_out",
            f"explained by {cause}: it slows prefill on {', '.join(hit)} whatever the prompts",
            figures,
        )
    if not hit:
        return Outcome(
            "ruled_out",
            "prompts did not get longer" if heavy else "no replica is prefill-bound",
            figures,
        )
    return Outcome(
        "supported",
        f"longer prompts ({t.text()}) on {', '.join(hit)}",
        figures,
        tuple(hit),
        confidence=0.8,
    )


def cache_miss(ctx: Context) -> Outcome:
    ev = ctx.ev
    restarted = _restarted(ctx, ctx.supported("ttft.prefill"))
    skewed = set(ctx.supported("inventory.version_skew"))
    if restarted and set(restarted) <= skewed:
        return Outcome(
            "ruled_out", "explained by inventory.version_skew: the restart changed the vLLM version"
        )
    restarted = [i for i in restarted if i not in skewed]
    if not restarted:
        return Outcome("ruled_out", "no replica with a TTFT rise restarted in the window")
    # The restart and the TTFT rise on the same replica are the evidence of a cold start;
    # the prefix-hit dip corroborates it, but at a 30 s grid a shared system prompt can
    # refill the cache before the first scrape, so its absence does not rule it out.
    name = "prefix_trend" if "prefix_trend" not in ev.missing else "prefix_hit_rate"
    figures = tuple(ctx.figure(name, i, "prefix_hit_drop", peers=False) for i in restarted)
    t = THRESHOLDS["prefix_hit_drop"]
    dipped = pick(
        ctx, restarted, lambda i: t.falls(ev.stat(name, i).value, ev.stat(name, i).baseline)
    )
    starts = ", ".join(
        f"{c.instance} at {c.at}"
        for c in ctx.changes
        if c.kind == "restart" and c.instance in restarted
    )
    missing = ctx.needs((name,), ())
    seen = (
        "prefix hits dipped"
        if dipped
        else "no prefix-hit dip visible at this resolution"
        if not missing
        else "prefix hits not exposed"
    )
    return Outcome(
        "supported",
        f"restarted cold ({starts}); {seen}",
        figures,
        tuple(restarted),
        confidence=0.85 if dipped else 0.65,
    )
