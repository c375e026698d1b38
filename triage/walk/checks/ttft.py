"""The TTFT side: the breach, queue (KV capacity, LoRA slots, load) and frontend; the
prefill branch is in `triage.walk.checks.prefill`."""

from __future__ import annotations

from collections.abc import Iterable

from triage.walk.checks.base import (
    TEXTS,
    Context,
    Outcome,
    confidence_past,
    daily_pattern,
    explained_elsewhere,
    pick,
    rise,
)
from triage.walk.thresholds import MIN_REQUESTS, THRESHOLDS
from triage.walk.types import Figure


def ttft(ctx: Context) -> Outcome:
    ev, t, spike = ctx.ev, THRESHOLDS["ttft_breach"], THRESHOLDS["ttft_spike"]
    missing = ctx.needs(("ttft_mean",), ())
    if missing:
        return Outcome("insufficient", "TTFT cannot be read", missing=missing)
    enough = [i for i in ev.models if (ev.stat("requests", i).value or 0) >= MIN_REQUESTS]
    breached = pick(
        ctx,
        enough,
        lambda i: (
            t.holds(ev.stat("ttft_mean", i).value, ev.stat("ttft_mean", i).baseline)
            or spike.holds(ev.stat("ttft_trend", i).value, ev.stat("ttft_trend", i).baseline)
        ),
    )
    figures = tuple(ctx.figure("ttft_mean", i, "ttft_breach") for i in (breached or enough))
    if not breached:
        return Outcome(
            "ruled_out",
            f"TTFT within {t.text()} of its baseline on every replica "
            f"with {MIN_REQUESTS:g}+ requests",
            figures,
        )
    best = max(breached, key=lambda i: ev.stat("ttft_mean", i).value or 0)
    conf = confidence_past(
        ev.stat("ttft_mean", best).value, ev.stat("ttft_mean", best).baseline, t.ratio
    )
    daily = daily_pattern(ctx, "ttft_mean", "ttft_breach", breached)
    risen = mean_risen(ctx, breached)
    spiked = [i for i in breached if i not in risen]
    parts = [f"TTFT rose on {', '.join(risen)}"] if risen else []
    if spiked:
        parts.append(
            f"TTFT spiked on {', '.join(spiked)} (one grid step at {spike.text()} over its "
            f"baseline median; the window mean within {t.text()})"
        )
    return Outcome(
        "supported",
        "; ".join(parts) + daily,
        figures,
        tuple(breached),
        confidence=conf / 2 if daily else conf,
    )


def _share(ctx: Context, part: str, instance: str) -> float | None:
    whole = rise(ctx.ev.stat("ttft_mean", instance))
    piece = rise(ctx.ev.stat(part, instance))
    if whole is None or piece is None or whole <= 0:
        return None
    return piece / whole


def _share_figure(ctx: Context, part: str, instance: str, key: str) -> Figure:
    return Figure(
        name=f"{part.removesuffix('_mean')}_share_of_ttft_rise",
        unit="ratio",
        value=_share(ctx, part, instance),
        threshold=f">= {THRESHOLDS[key].delta:g}",
        source=f"({part} rise) / (ttft_mean rise), {ctx.window_text}, {ctx.ev.backend}",
        requests=ctx.ev.stat("requests", instance).value,
        replicas=(instance,),
    )


def mean_risen(ctx: Context, instances: Iterable[str]) -> list[str]:
    """The replicas whose window-mean TTFT rose past `ttft_breach`. A replica breached by a
    spike alone (one grid step) is left out: a mean that hardly moved cannot be split into
    queue, prefill and the rest, and a spike is read only as a restart's cold start."""
    t, ev = THRESHOLDS["ttft_breach"], ctx.ev
    return pick(
        ctx,
        instances,
        lambda i: t.holds(ev.stat("ttft_mean", i).value, ev.stat("ttft_mean", i).baseline),
    )


def splittable(ctx: Context) -> list[str] | Outcome:
    """The breached replicas whose TTFT rise can be split into queue, prefill and the rest
    (their window mean rose), or the verdict of every split when all of them only spiked."""
    breached = ctx.supported("ttft")
    risen = mean_risen(ctx, breached)
    if risen or not breached:
        return risen
    return Outcome(
        "ruled_out",
        f"the mean TTFT stayed within {THRESHOLDS['ttft_breach'].text()} of its baseline on "
        f"{', '.join(breached)}: a spike alone is not split into queue, prefill and the rest",
    )


def by_share(ctx: Context, node: str, part: str, key: str) -> Outcome:
    breached = splittable(ctx)
    if isinstance(breached, Outcome):
        return breached
    missing = ctx.needs((part,), breached)
    if missing:
        return Outcome(
            "insufficient", f"{part} cannot be read on {', '.join(breached)}", missing=missing
        )
    limit = THRESHOLDS[key].delta
    hit = pick(ctx, breached, lambda i: (_share(ctx, part, i) or 0) >= limit)
    figures = tuple(_share_figure(ctx, part, i, key) for i in breached)
    if not hit:
        return Outcome("ruled_out", f"{part} explains under {limit:.0%} of the TTFT rise", figures)
    return Outcome(
        "supported",
        f"{part} explains {limit:.0%}+ of the TTFT rise on {', '.join(hit)}",
        figures,
        tuple(hit),
        confidence=0.8,
    )


def ttft_queue(ctx: Context) -> Outcome:
    return by_share(ctx, "ttft.queue", "queue_mean", "queue_share")


def kv_capacity(ctx: Context) -> Outcome:
    ev = ctx.ev
    queued = ctx.supported("ttft.queue")
    missing = ctx.needs(("kv_usage",), queued)
    if missing:
        return Outcome(
            "insufficient", "KV usage is not exposed on the queued replicas", missing=missing
        )
    full, waits, preempts = (
        THRESHOLDS["kv_full"],
        THRESHOLDS["capacity_waiting"],
        THRESHOLDS["preemptions"],
    )

    def kv_bound(i: str) -> bool:
        peak = ev.stat("kv_usage", i).value or 0.0
        capacity = ev.stat("waiting_capacity", i)
        waiting = (
            waits.holds(capacity.value, capacity.baseline) if capacity.value is not None else False
        )
        pre = ev.stat("preemptions", i)
        return peak >= full.delta and (waiting or preempts.holds(pre.value, pre.baseline))

    hit = pick(ctx, queued, kv_bound)
    cause = explained_elsewhere(ctx, hit)
    if cause:
        return Outcome(
            "ruled_out", f"explained by {cause}: a slower engine holds its KV blocks longer"
        )
    longer = set(ctx.supported("ttft.prefill.long_prompts"))
    if hit and set(hit) <= longer:
        return Outcome(
            "ruled_out",
            "explained by ttft.prefill.long_prompts: longer prompts "
            f"filled the KV cache on {', '.join(hit)}",
        )
    hit = [i for i in hit if i not in longer]
    figures = tuple(
        f
        for i in queued
        for f in (
            ctx.figure("kv_usage", i, "kv_full"),
            ctx.figure("waiting_capacity", i, "capacity_waiting"),
            ctx.figure("preemptions", i, "preemptions"),
        )
    )
    if not hit:
        return Outcome("ruled_out", "the queue is not waiting for KV blocks", figures)
    notes = (
        ""
        if "waiting_capacity" not in ev.missing
        else (" (waiting by reason is not exposed: read from KV usage and preemptions)")
    )
    return Outcome(
        "supported",
        f"KV cache full with requests waiting for blocks on {', '.join(hit)}{notes}",
        figures,
        tuple(hit),
        confidence=0.9 if not notes else 0.7,
    )


def lora_deferred(ctx: Context) -> Outcome:
    ev = ctx.ev
    queued = ctx.supported("ttft.queue")
    if ctx.needs(("waiting_deferred",), queued):
        return _lora_from_info(ctx, queued)
    t = THRESHOLDS["deferred_waiting"]
    hit = pick(
        ctx,
        queued,
        lambda i: t.holds(
            ev.stat("waiting_deferred", i).value, ev.stat("waiting_deferred", i).baseline
        ),
    )
    figures = tuple(ctx.figure("waiting_deferred", i, "deferred_waiting") for i in queued)
    if not hit:
        return Outcome("ruled_out", "no requests wait for LoRA slots", figures)
    return Outcome(
        "supported",
        f"requests wait for LoRA adapter slots on {', '.join(hit)}",
        figures,
        tuple(hit),
        confidence=0.85,
    )


def _lora_from_info(ctx: Context, queued: tuple[str, ...]) -> Outcome:
    """Without `waiting_by_reason` (vLLM before 0.11): the adapters `lora_requests_info`
    lists as waiting. vLLM registers that gauge only with LoRA enabled, so a replica
    without it cannot be waiting for adapter slots."""
    ev = ctx.ev
    if "lora_waiting" in ev.missing:
        return Outcome(
            "insufficient",
            "waiting requests by reason are not exposed and the "
            "LoRA adapter history cannot be read",
            missing=(ev.missing.get("waiting_deferred", ""), ev.missing["lora_waiting"]),
        )
    t = THRESHOLDS["lora_waiting_share"]
    shares = ev.stats.get("lora_waiting", {})
    figures = tuple(
        ctx.figure("lora_waiting", i, "lora_waiting_share", peers=False)
        for i in queued
        if i in shares
    )
    hit = pick(
        ctx,
        (i for i in queued if i in shares),
        lambda i: t.holds(shares[i].value, shares[i].baseline or 0.0),
    )
    if not hit:
        return Outcome(
            "ruled_out",
            "no queued replica lists waiting LoRA adapters (read from "
            "vllm:lora_requests_info: waiting_by_reason is not exposed)",
            figures,
        )
    return Outcome(
        "supported",
        f"LoRA adapters wait for slots on {', '.join(hit)} (read from vllm:lora_requests_info)",
        figures,
        tuple(hit),
        confidence=0.7,
    )


def queue_load(ctx: Context) -> Outcome:
    ev = ctx.ev
    queued = set(ctx.supported("ttft.queue"))
    explained = set(ctx.supported("ttft.queue.kv_capacity")) | set(
        ctx.supported("ttft.queue.lora_deferred")
    )
    rest = sorted(queued - explained)
    if not rest:
        return Outcome(
            "ruled_out",
            "the queued replicas are explained by KV capacity or LoRA slots"
            if queued
            else "no replica is queue-bound",
        )
    kv = ctx.found.get("ttft.queue.kv_capacity")
    if kv is not None and kv.verdict == "insufficient":
        return Outcome(
            "insufficient",
            "load cannot be told from a full KV cache without KV usage",
            missing=kv.missing,
        )
    lora = ctx.found.get("ttft.queue.lora_deferred")
    if lora is not None and lora.verdict == "insufficient":
        return Outcome(
            "insufficient", "load cannot be told from LoRA slot waits", missing=lora.missing
        )
    t = THRESHOLDS["request_rate"]
    models = {ev.models[i] for i in rest}
    figures: list[Figure] = []
    hit: list[str] = []
    for model in sorted(models):
        members = ev.instances_of(model)
        now = sum(ev.stat("request_rate", i).value or 0.0 for i in members)
        before = sum(ev.stat("request_rate", i).baseline or 0.0 for i in members)
        figures.append(
            Figure(
                "model_request_rate",
                "requests_per_second",
                now,
                before,
                threshold=t.text(),
                source=f"sum of {TEXTS['request_rate']} over "
                f"{model}'s replicas, {ctx.window_text}, {ev.backend}",
                replicas=tuple(members),
            )
        )
        if t.holds(now, before):
            hit.extend(i for i in rest if ev.models[i] == model)
    cause = explained_elsewhere(ctx, hit)
    if not cause and ctx.supported("availability.retry_storm"):
        cause = "availability.retry_storm: the extra arrivals are retries"
    if cause:
        return Outcome("ruled_out", f"explained by {cause}", tuple(figures))
    if not hit:
        return Outcome(
            "ruled_out", "arrivals did not rise: the queue is not from load", tuple(figures)
        )
    return Outcome(
        "supported",
        f"arrivals rose {t.text()} and queued on {', '.join(hit)}",
        tuple(figures),
        tuple(sorted(hit)),
        confidence=0.8,
    )


def frontend(ctx: Context) -> Outcome:
    ev = ctx.ev
    breached = splittable(ctx)
    if isinstance(breached, Outcome):
        return breached
    missing = ctx.needs(("queue_mean", "prefill_mean"), breached)
    if missing:
        return Outcome(
            "insufficient", "TTFT cannot be split into queue, prefill and the rest", missing=missing
        )
    share, cpu = THRESHOLDS["frontend_share"], THRESHOLDS["cpu_rate"]

    def residual_share(i: str) -> float | None:
        q, p = _share(ctx, "queue_mean", i), _share(ctx, "prefill_mean", i)
        return None if q is None or p is None else 1.0 - q - p

    hit = pick(ctx, breached, lambda i: (residual_share(i) or 0) >= share.delta)
    figures = [
        Figure(
            "frontend_share_of_ttft_rise",
            "ratio",
            residual_share(i),
            threshold=f">= {share.delta:g}",
            source="1 - (queue rise + prefill rise) / TTFT rise: inferred, vLLM has "
            f"no tokenization metric; {ctx.window_text}, {ev.backend}",
            replicas=(i,),
        )
        for i in breached
    ]
    if not hit:
        return Outcome("ruled_out", "queue and prefill explain the TTFT rise", tuple(figures))
    cpu_missing = ctx.needs(("cpu_rate",), hit)
    figures += [ctx.figure("cpu_rate", i, "cpu_rate") for i in hit]
    if cpu_missing:
        return Outcome(
            "insufficient",
            "the TTFT rise is outside queue and prefill, but the "
            "API server's CPU is not exposed to confirm it",
            tuple(figures),
            tuple(hit),
            cpu_missing,
        )
    busy = pick(
        ctx, hit, lambda i: cpu.holds(ev.stat("cpu_rate", i).value, ev.stat("cpu_rate", i).baseline)
    )
    if not busy:
        return Outcome(
            "ruled_out",
            "time before the engine grew but the API server's CPU did "
            "not: look at the network or the client",
            tuple(figures),
        )
    return Outcome(
        "supported",
        f"time before the engine grew with API-server CPU on "
        f"{', '.join(busy)} (inferred: no tokenization metric)",
        tuple(figures),
        tuple(busy),
        confidence=0.7,
    )
