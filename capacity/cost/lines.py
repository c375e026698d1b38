"""The lines of a cost report, built from one model's summed usage and bill: tenant and
unattributed lines, idle lines, tenant totals, model summaries and the reconciliation.
Used by `capacity.cost.allocation`, which explains the two bases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from capacity.cost.bill import ModelBill
from capacity.cost.report import (
    Basis,
    CostLine,
    LineKind,
    ModelSummary,
    Reconciliation,
    TenantTotal,
    add_intervals,
    add_known,
    per_million,
)
from slo.evaluation import Interval

IDLE = "idle"
PLATFORM = "(platform)"
NO_PRICE: Final = "no price set"


@dataclass(frozen=True)
class Usage:
    """Summed usage behind one line, before costing."""

    tenant: str
    kind: LineKind
    reason: str
    requests_ok: float | None
    requests_failed: float | None
    prompt_tokens: float | None
    output_tokens: float


@dataclass(frozen=True)
class ModelUsage:
    bill: ModelBill
    usages: tuple[Usage, ...]
    seen: float
    unseen: float
    notes: tuple[str, ...]

    @property
    def total(self) -> float:
        return self.seen + self.unseen

    @property
    def usage_known(self) -> bool:  # busy measured, or nothing to split it over
        return self.bill.busy_fraction is not None or self.total == 0


def usage_line(
    model: ModelUsage, usage: Usage, platform: float | None, fleet_tokens: float
) -> CostLine:
    bill, price, busy = model.bill, model.bill.price_usd, model.bill.busy_fraction
    share = usage.output_tokens / model.total if model.total > 0 else 0.0
    gpu_hours = bill.gpu_hours * share
    usage_hours = None if busy is None else busy * bill.gpu_hours * share
    gpu_cost = None if price is None else price * bill.gpu_hours * share
    usage_cost = None if price is None or usage_hours is None else price * usage_hours
    platform_share = share_of_platform(platform, usage.output_tokens, fleet_tokens)
    good = None if bill.good_fraction is None else bill.good_fraction.scaled(usage.output_tokens)
    cost, cost_usage = (
        with_platform(gpu_cost, platform_share),
        with_platform(usage_cost, platform_share),
    )
    per_m, note = per_million(cost, good, NO_PRICE)
    per_m_usage, _ = per_million(cost_usage, good, NO_PRICE)
    return CostLine(
        usage.tenant, bill.model_name, usage.kind, usage.reason, usage.requests_ok,
        usage.requests_failed, usage.prompt_tokens, usage.output_tokens, share, good, gpu_hours,
        usage_hours, gpu_cost, usage_cost, platform_share, cost, cost_usage, per_m, per_m_usage,
        note,
    )  # fmt: skip


def share_of_platform(platform: float | None, tokens: float, fleet_tokens: float) -> float | None:
    if platform is None:
        return None
    return platform * tokens / fleet_tokens if fleet_tokens > 0 else 0.0


def with_platform(gpu_cost: float | None, platform_share: float | None) -> float | None:
    if gpu_cost is None:
        return None
    return gpu_cost + (platform_share or 0.0)


def idle_line(model: ModelUsage, platform: float | None) -> CostLine:
    bill, price, busy = model.bill, model.bill.price_usd, model.bill.busy_fraction
    if model.total > 0:
        reason = "idle capacity: on the allocation basis it is inside the tenants' share"
        hours, usage_hours = 0.0, None if busy is None else (1 - busy) * bill.gpu_hours
    else:
        reason = "no output tokens for this model in the period: its whole bill is idle"
        hours = usage_hours = bill.gpu_hours
    cost = None if price is None else price * hours
    usage_cost = None if price is None or usage_hours is None else price * usage_hours
    platform_share = None if platform is None else 0.0
    return CostLine(
        IDLE, bill.model_name, "idle", reason, None, None, None, 0.0, None, Interval.exact(0.0),
        hours, usage_hours, cost, usage_cost, platform_share, cost, usage_cost, None, None,
        "idle capacity produced no output tokens",
    )  # fmt: skip


def platform_idle_line(platform: float) -> CostLine:
    return CostLine(
        IDLE, PLATFORM, "idle", "no output tokens in the fleet to split the platform cost by",
        None, None, None, 0.0, None, Interval.exact(0.0), 0.0, 0.0, 0.0, 0.0, platform, platform,
        platform, None, None, "no output tokens in the fleet",
    )  # fmt: skip


def tenant_total(tenant: str, lines: list[CostLine], no_cost: str) -> TenantTotal:
    good = add_intervals([ln.good_output_tokens for ln in lines])
    cost = add_known([ln.cost_usd for ln in lines])
    usage_cost = add_known([ln.usage_cost_usd for ln in lines])
    per_m, note = per_million(cost, good, no_cost)
    per_m_usage, _ = per_million(usage_cost, good, no_cost)

    def known(name: str) -> float | None:
        return add_known([getattr(ln, name) for ln in lines])

    return TenantTotal(
        tenant, tuple(sorted({ln.model_name for ln in lines})), known("requests_ok"),
        known("requests_failed"), known("prompt_tokens"), sum(ln.output_tokens for ln in lines),
        good, sum(ln.gpu_hours for ln in lines), known("usage_gpu_hours"), known("gpu_cost_usd"),
        known("usage_gpu_cost_usd"), known("platform_cost_usd"), cost, usage_cost, per_m,
        per_m_usage, note,
    )  # fmt: skip


def model_summary(model: ModelUsage, lines: list[CostLine]) -> ModelSummary:
    bill, price, busy = model.bill, model.bill.price_usd, model.bill.busy_fraction
    gpu_bill = None if price is None else price * bill.gpu_hours
    idle = next((ln for ln in lines if ln.kind == "idle"), None)
    idle_hours = 0.0 if idle is None else idle.usage_gpu_hours  # all of it when no tokens
    idle_cost = 0.0 if idle is None else idle.usage_gpu_cost_usd
    used = [ln for ln in lines if ln.kind != "idle"]
    good = None if bill.good_fraction is None else bill.good_fraction.scaled(model.total)
    platform = add_known([ln.platform_cost_usd for ln in used]) or 0.0
    cost = None if gpu_bill is None else gpu_bill + platform
    usage_cost = add_known([ln.usage_cost_usd for ln in used]) if used else None
    per_m, note = per_million(cost, good, NO_PRICE)
    per_m_usage, _ = per_million(usage_cost, good, NO_PRICE)
    return ModelSummary(
        bill.model_name, bill.gpu_hours, busy, None if busy is None else busy * bill.gpu_hours,
        idle_hours, price, gpu_bill, idle_cost, bill.engine_output_tokens, model.seen,
        model.unseen, model.total, bill.good_fraction, good, per_m, per_m_usage, note,
        model.notes,
    )  # fmt: skip


def reconcile(basis: Basis, lines: list[CostLine], bill: float, covers: str) -> Reconciliation:
    parts = {"tenant": 0.0, "unattributed": 0.0, "idle": 0.0}
    for ln in lines:
        gpu = ln.gpu_cost_usd if basis == "allocation" else ln.usage_gpu_cost_usd
        parts[ln.kind] += (gpu or 0.0) + (ln.platform_cost_usd or 0.0)
    totals = (parts["tenant"], parts["unattributed"], parts["idle"])
    return Reconciliation.of(basis, bill, totals, covers)
