"""The TPOT side: step work, preemption, a straggler's GPU, a tensor-parallel link."""

from __future__ import annotations

from triage.walk.checks.base import Context, Outcome, confidence_past, daily_pattern, pick
from triage.walk.thresholds import MIN_REQUESTS, THRESHOLDS, XID_NVLINK
from triage.walk.types import Figure


def tpot(ctx: Context) -> Outcome:
    ev = ctx.ev
    missing = ctx.needs(("itl_mean",), ())
    if missing:
        return Outcome("insufficient", "inter-token latency cannot be read", missing=missing)
    rise, outlier = THRESHOLDS["itl_breach"], THRESHOLDS["itl_outlier"]
    enough = [i for i in ev.models if (ev.stat("requests", i).value or 0) >= MIN_REQUESTS]
    breached = pick(
        ctx,
        enough,
        lambda i: (
            rise.holds(ev.stat("itl_mean", i).value, ev.stat("itl_mean", i).baseline)
            or outlier.holds(ev.stat("itl_mean", i).value, ev.peers("itl_mean", i))
        ),
    )
    figures = tuple(ctx.figure("itl_mean", i, "itl_breach") for i in (breached or enough))
    if not breached:
        return Outcome(
            "ruled_out",
            f"ITL within {rise.text()} of its baseline and "
            f"{outlier.text()} of its peers on every replica",
            figures,
        )
    best = max(breached, key=lambda i: ev.stat("itl_mean", i).value or 0)
    conf = confidence_past(
        ev.stat("itl_mean", best).value, ev.stat("itl_mean", best).baseline, rise.ratio
    )
    daily = daily_pattern(ctx, "itl_mean", "itl_breach", breached)
    return Outcome(
        "supported",
        f"ITL rose on {', '.join(breached)}{daily}",
        figures,
        tuple(breached),
        confidence=conf / 2 if daily else conf,
    )


# TTFT-side causes that also slow decoding: more or longer work in every step.
TTFT_CAUSES = (
    "ttft.queue.load",
    "ttft.queue.kv_capacity",
    "ttft.queue.lora_deferred",
    "ttft.prefill.long_prompts",
    "ttft.prefill.cache_miss",
    "availability.retry_storm",
)


def _ttft_cause(ctx: Context, replicas: list[str]) -> str:
    """The supported TTFT leaf whose replicas share the model of these replicas, if any."""
    models = {ctx.ev.models.get(i) for i in replicas}
    for leaf in TTFT_CAUSES:
        if any(ctx.ev.models.get(i) in models for i in ctx.supported(leaf)):
            return leaf
    return ""


def _even(ctx: Context, members: list[str]) -> bool:
    """The ITL rises of a model's replicas are within `itl_alike_spread` of each other."""
    rises = [
        (stat.value / stat.baseline) - 1.0
        for stat in (ctx.ev.stat("itl_mean", i) for i in members)
        if stat.value is not None and stat.baseline
    ]
    if len(rises) < len(members) or max(rises) <= 0:
        return False
    return min(rises) >= THRESHOLDS["itl_alike_spread"].delta * max(rises)


def step_work(ctx: Context) -> Outcome:
    ev = ctx.ev
    slow = set(ctx.supported("tpot"))
    alike, growth = THRESHOLDS["itl_alike"], THRESHOLDS["batch_growth"]
    figures: list[Figure] = []
    hit: list[str] = []
    for model in sorted({ev.models[i] for i in slow}):
        members = ev.instances_of(model)
        if len(members) < 2:
            continue  # "alike" needs peers: one replica's slowdown is the straggler's question
        every = all(
            alike.holds(ev.stat("itl_mean", i).value, ev.stat("itl_mean", i).baseline)
            for i in members
        ) and _even(ctx, members)
        grew = [
            i
            for i in members
            if growth.holds(ev.stat("running", i).value, ev.stat("running", i).baseline)
        ]
        figures += [ctx.figure("itl_mean", i, "itl_alike") for i in members]
        figures += [ctx.figure("running", i, "batch_growth") for i in members]
        if every and len(grew) == len(members):
            hit.extend(members)
    cause = _ttft_cause(ctx, hit)
    if cause:
        return Outcome(
            "ruled_out", f"explained by {cause}: the batch grew because of it", tuple(figures)
        )
    missing = ctx.needs(("running",), slow)
    if not hit and missing:
        return Outcome(
            "insufficient", "the batch size cannot be read", tuple(figures), missing=missing
        )
    if not hit:
        return Outcome(
            "ruled_out",
            "the slowdown is not alike on every replica of a model with a grown batch",
            tuple(figures),
        )
    return Outcome(
        "supported",
        f"every replica slowed alike while the batch grew: {', '.join(hit)}",
        tuple(figures),
        tuple(sorted(hit)),
        confidence=0.75,
    )


def preemption(ctx: Context) -> Outcome:
    ev = ctx.ev
    slow = ctx.supported("tpot")
    missing = ctx.needs(("preemptions",), slow)
    if missing:
        return Outcome("insufficient", "preemptions cannot be read", missing=missing)
    pre, full = THRESHOLDS["preemptions"], THRESHOLDS["kv_full"]
    hit = pick(
        ctx,
        slow,
        lambda i: (
            pre.holds(ev.stat("preemptions", i).value, ev.stat("preemptions", i).baseline)
            and (ev.stat("kv_usage", i).value or 0.0) >= full.delta
        ),
    )
    figures = tuple(
        f
        for i in slow
        for f in (ctx.figure("preemptions", i, "preemptions"), ctx.figure("kv_usage", i, "kv_full"))
    )
    cause = _ttft_cause(ctx, hit)
    if cause:
        return Outcome(
            "ruled_out",
            f"explained by {cause}: the same full KV cache queues admissions and preempts decodes",
            figures,
        )
    if not hit:
        return Outcome(
            "ruled_out", "no preemptions with a full KV cache on the slow replicas", figures
        )
    return Outcome(
        "supported",
        f"preemptions with a full KV cache on {', '.join(hit)}",
        figures,
        tuple(hit),
        confidence=0.8,
    )


def straggler(ctx: Context) -> Outcome:
    ev = ctx.ev
    t = THRESHOLDS["itl_outlier"]
    slow = ctx.supported("tpot")
    with_peers = [i for i in slow if ev.peers("itl_mean", i) is not None]
    hit = pick(
        ctx, with_peers, lambda i: t.holds(ev.stat("itl_mean", i).value, ev.peers("itl_mean", i))
    )
    figures = tuple(ctx.figure("itl_mean", i, "itl_outlier") for i in slow)
    if not with_peers and slow:
        return Outcome(
            "insufficient",
            "the slow replicas have no peers serving the same model to compare with",
            figures,
            missing=("a second replica of the model",),
        )
    if not hit:
        return Outcome(
            "ruled_out", f"no replica's ITL is {t.text()} above its peers' median", figures
        )
    return Outcome(
        "supported",
        f"{', '.join(hit)} far slower than its peers",
        figures,
        tuple(hit),
        confidence=0.8,
    )


def gpu_throttle(ctx: Context) -> Outcome:
    ev = ctx.ev
    outliers = ctx.supported("tpot.straggler")
    missing = ctx.needs(("sm_clock",), outliers)
    figures = tuple(
        f
        for i in outliers
        for f in (ctx.figure("sm_clock", i, "sm_clock_drop"), ctx.figure("power", i, "power_drop"))
    )
    if missing:
        return Outcome(
            "insufficient",
            "the straggler's GPUs are not visible (needs a dcgm-exporter joined to the replica)",
            figures,
            outliers,
            missing,
        )
    clock, power = THRESHOLDS["sm_clock_drop"], THRESHOLDS["power_drop"]
    hit = pick(
        ctx,
        outliers,
        lambda i: (
            clock.falls(ev.stat("sm_clock", i).value, ev.stat("sm_clock", i).baseline)
            or power.falls(ev.stat("power", i).value, ev.stat("power", i).baseline)
        ),
    )
    if not hit:
        return Outcome("ruled_out", "the straggler's GPUs kept their clock and power", figures)
    return Outcome(
        "supported",
        f"GPU clock and power dropped on {', '.join(hit)}",
        figures,
        tuple(hit),
        confidence=0.85,
    )


def collective(ctx: Context) -> Outcome:
    ev = ctx.ev
    slow = ctx.supported("tpot")
    missing = ctx.needs(("xid", "nvlink"), slow)
    figures = tuple(
        f
        for i in slow
        for f in (
            ctx.figure("xid", i, "> 0 (74: NVLink)", peers=False),
            ctx.figure("nvlink", i, "nvlink_drop", peers=False),
            ctx.figure("pcie_tx", i, "pcie_rise", peers=False),
        )
    )
    if missing and len(missing) == 2:
        return Outcome(
            "insufficient",
            "no XID or NVLink evidence for the slow replicas",
            figures,
            missing=missing,
        )
    drop, pcie = THRESHOLDS["nvlink_drop"], THRESHOLDS["pcie_rise"]

    def link(i: str) -> bool:
        xid = ev.stat("xid", i)
        new_xid = (xid.value or 0) > 0 and (xid.baseline or 0) != xid.value
        nv = ev.stat("nvlink", i)
        return new_xid or (
            drop.falls(nv.value, nv.baseline)
            and (nv.baseline or 0) > 0
            and pcie.holds(ev.stat("pcie_tx", i).value, ev.stat("pcie_tx", i).baseline)
        )

    hit = pick(ctx, slow, link)
    if not hit:
        return Outcome(
            "ruled_out", "no new XID and NVLink traffic held on the slow replicas", figures
        )
    nvlink_xid = any(ev.stat("xid", i).value == XID_NVLINK for i in hit)
    return Outcome(
        "supported",
        f"a failing link in the tensor-parallel group of "
        f"{', '.join(hit)}" + (" (XID 74: NVLink error)" if nvlink_xid else ""),
        figures,
        tuple(hit),
        confidence=0.9 if nvlink_xid else 0.7,
    )
