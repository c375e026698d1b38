"""Cost per 1M good output tokens per tenant and model, from plain inputs.

    report = allocate(bills, attribute(rows, rules), platform_cost_usd=platform, period=...)

Per model: bill = GPU-hours x price per GPU-hour. On the allocation basis the whole bill
(idle included) is split by output-token share within the model; on the usage basis only
the busy part (busy fraction x GPU-hours x price) is, and the idle rest is its own line.
The platform cost is split by output-token share across the fleet. Output tokens the
engines produced and the gateway did not see are an "unattributed" line; a model without
output tokens leaves its whole bill on its idle line. So tenant costs + unattributed +
idle = the bill, which `CostReport.reconciliation` checks on each basis.

Good output tokens = output tokens x the model's good fraction from the SLO app. Failed
requests and tokens that missed the SLO carry cost without good tokens. No price set means
no cost (None), never a default price and never $0; inputs that are negative, NaN or
infinite are rejected with a `CostInputError` naming the field.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from capacity.cost.bill import ModelBill, usd
from capacity.cost.lines import (
    IDLE,
    NO_PRICE,
    PLATFORM,
    ModelUsage,
    Usage,
    idle_line,
    model_summary,
    platform_idle_line,
    reconcile,
    tenant_total,
    usage_line,
)
from capacity.cost.report import CostLine, CostReport, PriceStatus, add_known
from capacity.cost.tenants import UNATTRIBUTED, Attribution, CostInputError
from capacity.figures import Quantity

__all__ = ["IDLE", "NO_PRICE", "PLATFORM", "allocate"]

UNMATCHED_REASON = "no tenant rule matched these usage rows"
UNSEEN_REASON = "output tokens the engines produced that the {source} did not see"
FAILED_NOTE = (
    "failed requests and output tokens that missed the SLO are cost without good tokens: "
    "they are in the token share, not in good output tokens"
)
GOOD_NOTE = (
    "good output tokens = output tokens x the model's good fraction (finished requests "
    "meeting every per-request objective); an interval when the fraction is bounds"
)


def models_of(bills: Iterable[ModelBill], attribution: Attribution) -> list[ModelUsage]:
    by_name: dict[str, ModelBill] = {}
    for bill in bills:
        if bill.model_name in by_name:
            raise CostInputError("bills", f"two bills for model {bill.model_name!r}")
        by_name[bill.model_name] = bill
    rows_of: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(dict)
    sources: dict[str, set[str]] = defaultdict(set)
    for attributed in attribution.rows:
        row = attributed.row
        if row.model_name not in by_name:
            raise CostInputError(
                "bills",
                f"usage rows for model {row.model_name!r} but no ModelBill: pass one "
                "(gpu_hours=0.0 when no engine served it)",
            )
        sources[row.model_name].add(row.source)
        key = (attributed.tenant, row.source)
        sums = rows_of[row.model_name].setdefault(key, [0.0, 0.0, 0.0, 0.0])
        for i, value in enumerate(
            (row.requests_ok, row.requests_failed, row.prompt_tokens, row.output_tokens)
        ):
            sums[i] += value
    models = []
    for name in sorted(by_name):
        bill = by_name[name]
        if len(sources[name]) > 1:
            raise CostInputError(
                "source", f"model {name!r} has gateway and engine rows: tokens would count twice"
            )
        usages = [
            Usage(
                tenant,
                "unattributed" if tenant == UNATTRIBUTED else "tenant",
                UNMATCHED_REASON if tenant == UNATTRIBUTED else "",
                *(sums[0], sums[1], sums[2], sums[3]),
            )
            for (tenant, _), sums in sorted(rows_of[name].items())
        ]
        usages.sort(key=lambda u: (u.kind == "unattributed", u.tenant))
        seen = sum(u.output_tokens for u in usages)
        unseen, notes = 0.0, []
        source = "gateway" if sources[name] != {"engine"} else "engine usage rows"
        unseen_reason = UNSEEN_REASON.format(source=source)
        engine = bill.engine_output_tokens
        if engine is None:
            notes.append(f"{name}: engine output tokens not read, unseen tokens cannot be shown")
        elif engine > seen:
            unseen = engine - seen
            usages.append(
                Usage(UNATTRIBUTED, "unattributed", unseen_reason, None, None, None, unseen)
            )
        elif seen > engine:
            notes.append(
                f"{name}: the {source} counted {seen - engine:,.0f} more output tokens than the "
                "engines (scrape gaps or resets): shares use its counts, none is unattributed"
            )
        if bill.busy_fraction is None:
            notes.append(f"{name}: busy fraction not measured, no usage-basis cost or idle split")
        if bill.good_fraction is None:
            notes.append(f"{name}: good fraction unknown, no cost per 1M good output tokens")
        models.append(ModelUsage(bill, tuple(usages), seen, unseen, tuple(notes)))
    return models


def allocate(
    bills: Iterable[ModelBill],
    attribution: Attribution,
    platform_cost_usd: Quantity | None = None,
    period: str = "",
) -> CostReport:
    """The cost report of one period: lines, tenant totals, model summaries, reconciliation."""
    platform = usd(platform_cost_usd, "platform_cost_usd")
    models = models_of(bills, attribution)
    fleet_tokens = sum(m.total for m in models)
    lines: list[CostLine] = []
    summaries = []
    for model in models:
        mine = [usage_line(model, usage, platform, fleet_tokens) for usage in model.usages]
        if model.bill.gpu_hours > 0:
            mine.append(idle_line(model, platform))
        summaries.append(model_summary(model, mine))
        lines += mine
    if platform and fleet_tokens == 0:
        lines.append(platform_idle_line(platform))

    priced = [m for m in models if m.bill.price_usd is not None]
    unpriced_bills = [m.bill for m in models if m.bill.price_usd is None]
    unpriced = [bill.model_name for bill in unpriced_bills]
    status: PriceStatus = "priced" if models and not unpriced else "partly priced"
    if not priced:
        explained = any(bill.unpriced_reason for bill in unpriced_bills)
        status = "not priced" if explained else "no price set"
    notes = [FAILED_NOTE, GOOD_NOTE]
    if status == NO_PRICE:
        notes.insert(0, "no price set: costs are not shown, usage only (no price is assumed)")
    else:
        notes[:0] = [
            f"{bill.unpriced_reason or NO_PRICE} for {bill.model_name}: its costs are not shown"
            for bill in unpriced_bills
        ]
    if platform is None:
        notes.append("no platform cost set: costs are GPU costs only")
    for model in models:
        notes += model.notes
    notes += attribution.notes

    gpu_bill = sum(m.bill.gpu_hours * (m.bill.price_usd or 0.0) for m in priced) if priced else None
    bill_usd = (
        None if gpu_bill is None and platform is None else (gpu_bill or 0.0) + (platform or 0.0)
    )
    with_usage = [m for m in priced if m.usage_known]
    usage_bill = sum(m.bill.gpu_hours * (m.bill.price_usd or 0.0) for m in with_usage)
    platform_words = "" if platform is None else " and the platform cost"
    reconciliation = usage_reconciliation = None
    if bill_usd is not None:
        covers = f"models priced: {', '.join(m.bill.model_name for m in priced) or 'none'}"
        reconciliation = reconcile("allocation", lines, bill_usd, covers + platform_words)
        names = ", ".join(m.bill.model_name for m in with_usage) or "none"
        covers = f"models priced with a busy fraction: {names}"
        usage_reconciliation = reconcile(
            "usage", lines, usage_bill + (platform or 0.0), covers + platform_words
        )
    idle_lines = [ln for ln in lines if ln.kind == "idle" and ln.gpu_cost_usd is not None]
    idle_cost = add_known([ln.usage_cost_usd for ln in idle_lines]) if priced else None

    by_tenant: dict[str, list[CostLine]] = defaultdict(list)
    for ln in lines:
        if ln.kind != "idle":
            by_tenant[ln.tenant].append(ln)
    order = sorted(by_tenant, key=lambda t: (t == UNATTRIBUTED, t))
    no_cost = (
        NO_PRICE
        if status == NO_PRICE
        else f"not priced for a model it used ({', '.join(unpriced)})"
    )
    totals = tuple(tenant_total(tenant, by_tenant[tenant], no_cost) for tenant in order)
    return CostReport(
        period, status, tuple(lines), totals, tuple(summaries),
        sum(m.bill.gpu_hours for m in models), gpu_bill, platform, bill_usd, idle_cost,
        reconciliation, usage_reconciliation, tuple(notes),
    )  # fmt: skip
