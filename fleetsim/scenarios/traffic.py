"""Scenarios that change who sends what: extra traffic pinned to the affected replicas
for the window, sized from their capacity and the hour (and the front end's CPU)."""

from __future__ import annotations

from fleetsim.fleet import LOAD_FACTOR, FleetModel
from fleetsim.replica import FRONTEND_BASE_S, FRONTEND_PER_TOKEN_S, Replica
from fleetsim.roofline import StepModel, requests_per_second
from fleetsim.scenarios.model import by_model, knobs, pin, window
from fleetsim.workloads import (
    DEMANDS,
    WORKLOADS,
    Demand,
    Dist,
    diurnal,
    variant,
)

# A burst brings the targets' offered load to this multiple of their estimated capacity,
# whatever the hour: the daily curve decides how much extra traffic that takes.
BURST_TOTAL_LOAD = 1.9
BURST_MIN_EXTRA = 0.5  # and it always adds at least half the capacity on top
TOKENIZER_UTILIZATION = 1.15  # the starved front end needs 115% of its CPU at that hour
SURGE_PREFILL_SHARE = 0.3  # long prompts take this share of the targets' prefill capacity
KV_OVERSUBSCRIPTION = 1.4  # the batch job wants this many times the sequences KV can hold
THRASH_LOAD = 0.25  # adapter traffic as a share of the targets' chat capacity
THRASH_ADAPTERS = 16


def traffic_burst(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    daily = diurnal(fleet.epoch + at)  # what the baseline traffic is at that hour
    extra_load = max(BURST_MIN_EXTRA, BURST_TOTAL_LOAD - LOAD_FACTOR * daily)
    for model, group in by_model(fleet, targets).items():
        demands = [d for d in DEMANDS if d.model == model and d.workload in ("chat", "rag")]
        share = sum(d.share for d in demands)
        prompt = sum(d.share * WORKLOADS[d.workload].mean_prompt for d in demands) / share
        output = sum(d.share * WORKLOADS[d.workload].output.mean for d in demands) / share
        capacity = sum(r.cfg.dp * requests_per_second(r.cfg, prompt, output) for r in group)
        for d in demands:
            rate = extra_load * capacity * d.share / share
            pin(fleet, "burst", d, WORKLOADS[d.workload], rate, group, at, duration)


def long_prompt_surge(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in by_model(fleet, targets).items():
        cfg = group[0].cfg
        hi = int(0.85 * cfg.max_model_len) - 1024 - 350
        median = min(12000.0, 0.55 * hi)
        wl = variant(WORKLOADS["rag"], name="rag-long",
                     prompt=Dist(median, 0.3, int(median / 2), hi),
                     output=Dist(260, 0.6, 16, 1024), max_tokens_share=1.0)  # fmt: skip
        chunk = cfg.deployment.max_num_batched_tokens
        step, *_ = StepModel(cfg).cost(0, 0.0, chunk, chunk / 2)
        prefill_tokens_per_s = chunk / step * cfg.dp * len(group)
        rate = SURGE_PREFILL_SHARE * prefill_tokens_per_s / wl.mean_prompt
        pin(fleet, "surge", Demand("globex", model, "rag", 1.0), wl, rate, group, at, duration)


def kv_pressure(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in by_model(fleet, targets).items():
        cfg = group[0].cfg
        max_len = cfg.max_model_len
        prompt_hi = int(0.35 * max_len)
        prompt = min(6000.0, 0.3 * max_len)
        output = min(2500.0, 0.3 * max_len)
        max_tokens = max_len - prompt_hi - 1
        wl = variant(WORKLOADS["batch"], name="batch-long",
                     prompt=Dist(prompt, 0.3, int(prompt / 2), prompt_hi),
                     output=Dist(output, 0.25, int(output / 2), max_tokens),
                     max_tokens=max_tokens)  # fmt: skip
        ctx = prompt + output / 2
        fill = min(cfg.deployment.max_num_seqs, int(cfg.kv_tokens / ctx))
        step, *_ = StepModel(cfg).cost(fill, fill * ctx, 0, 0.0)
        # Little's law: more sequences than the KV cache holds, each held for its decode.
        rate = KV_OVERSUBSCRIPTION * fill / (output * step) * cfg.dp * len(group)
        demand = Demand("umbrella", model, "batch", 1.0)
        pin(fleet, "kv", demand, wl, rate, group, at, duration)


def tokenizer_saturation(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for i in targets:
        replica = fleet.replicas[i]
        model = replica.cfg.model.served_name
        demands = [d for d in DEMANDS if d.model == model]
        rate = 0.0
        prompt = 0.0
        for d in demands:
            r = fleet.base_rates.get((d.tenant, d.model, d.workload), 0.0)
            r *= WORKLOADS[d.workload].turns_mean or 1.0
            rate += r
            prompt += r * WORKLOADS[d.workload].mean_prompt
        # The traffic it gets at that hour: the front end saturates at night too.
        per_replica = rate * diurnal(fleet.epoch + at) / len(fleet.replicas_of(model))
        per_replica /= replica.cfg.dp
        service = FRONTEND_BASE_S + FRONTEND_PER_TOKEN_S * prompt / max(rate, 1e-9)
        slowdown = TOKENIZER_UTILIZATION / max(per_replica * service, 1e-9)
        window(fleet, at, duration,
                knobs(replica, frontend_slowdown=slowdown),
                knobs(replica, frontend_slowdown=1.0))  # fmt: skip


def lora_thrash(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in by_model(fleet, targets).items():
        adapters = tuple(f"acme-ft-{k:02d}" for k in range(THRASH_ADAPTERS))
        demand = Demand("acme", model, "chat", 1.0, adapters, 1.0)
        wl = WORKLOADS["chat"]
        cfg = group[0].cfg
        rate = THRASH_LOAD * requests_per_second(cfg, wl.mean_prompt, wl.output.mean) * len(group)
        pin(fleet, "lora", demand, wl, rate, group, at, duration)


# healthy-burst: interactive traffic rises by this share of the model's traffic at that
# hour, or of its average hour's when quieter (a burst is so many more users, not a share of
# a quiet hour: at night half of that hour's traffic hid behind the batch tenants' own swings,
# +19 % against the +20 % the signal needs), but never past this share of its estimated
# capacity (the peak hour leaves less room).
HEALTHY_EXTRA = 0.5
HEALTHY_MAX_LOAD = 0.8


def _interactive_capacity(model: str, group: list[Replica]) -> tuple[list[Demand], float]:
    """The model's chat/RAG demands, and the requests/s its replicas serve of that mix."""
    demands = [d for d in DEMANDS if d.model == model and d.workload in ("chat", "rag")]
    share = sum(d.share for d in demands)
    prompt = sum(d.share * WORKLOADS[d.workload].mean_prompt for d in demands) / share
    output = sum(d.share * WORKLOADS[d.workload].output.mean for d in demands) / share
    return demands, sum(r.cfg.dp * requests_per_second(r.cfg, prompt, output) for r in group)


def healthy_burst(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    daily = diurnal(fleet.epoch + at)
    load = LOAD_FACTOR * daily  # the baseline's share of capacity then
    for model, group in by_model(fleet, targets).items():
        demands, capacity = _interactive_capacity(model, group)
        share = sum(d.share for d in demands)
        requests = sum(
            rate * (WORKLOADS[w].turns_mean or 1.0) * max(daily, 1.0)
            for (_, m, w), rate in fleet.base_rates.items()
            if m == model
        )
        extra = min(HEALTHY_EXTRA * requests, max(0.0, HEALTHY_MAX_LOAD - load) * capacity)
        for d in demands:
            pin(
                fleet,
                "healthy",
                d,
                WORKLOADS[d.workload],
                extra * d.share / share,
                group,
                at,
                duration,
            )


# step-work: the operator doubles the batch limits, and a tenant's long answers fill the
# new room: this many extra sequences per engine, as a share of what KV holds of them.
STEP_LIMIT_FACTOR = 2
STEP_WORK_KV_SHARE = 0.12


def step_work(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in by_model(fleet, targets).items():
        cfg = group[0].cfg
        dep = cfg.deployment
        wl = variant(WORKLOADS["chat"], name="chat-long-answers",
                     prompt=Dist(250, 0.6, 16, 2000), output=Dist(700, 0.35, 200, 2048),
                     max_tokens=2048, max_tokens_share=1.0, abort_share=0.0)  # fmt: skip
        ctx = wl.mean_prompt + wl.output.mean / 2
        extra = min(dep.max_num_seqs, int(STEP_WORK_KV_SHARE * cfg.kv_tokens / ctx))
        step, *_ = StepModel(cfg).cost(extra, extra * ctx, 0, 0.0)
        # Little's law: `extra` sequences in flight, each held for its whole decode.
        rate = extra / (wl.output.mean * step) * cfg.dp * len(group)
        pin(fleet, "step", Demand("hooli", model, "chat", 1.0), wl, rate, group, at, duration)
        # The limits change in place: a restart would add its own signature (resets, a
        # cold prefix cache) to one that is only about how much work each step does.
        for replica in group:
            raised = knobs(
                replica,
                max_num_seqs=STEP_LIMIT_FACTOR * dep.max_num_seqs,
                max_num_batched_tokens=STEP_LIMIT_FACTOR * dep.max_num_batched_tokens,
            )
            window(fleet, at, duration, raised,
                   knobs(replica, max_num_seqs=None, max_num_batched_tokens=None))  # fmt: skip
