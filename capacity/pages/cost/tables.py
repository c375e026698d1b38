"""The rows of the cost page's tenant and model tables, the reconciliation lines, the
findings and sources, and the JSON export."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from capacity.cost import NO_PRICE, UNATTRIBUTED, CostReport, Reconciliation, TenantTotal
from capacity.models import FleetPrice
from capacity.pages.cost.shown import (
    DASH,
    IDLE,
    NOT_SEEN,
    Shown,
    count_shown,
    fraction_shown,
    hours_shown,
    interval_shown,
    money_text,
    usd_shown,
)
from capacity.pages.params import iso
from capacity.services import MONTH_HOURS, CostReview
from inventory.models import Fleet


@dataclass(frozen=True)
class TenantRow:
    tenant: str
    kind: Literal["tenant", "unattributed", "idle", "total"]
    note: str
    requests_ok: Shown
    requests_failed: Shown
    prompt_tokens: Shown
    output_tokens: Shown
    good_output_tokens: Shown
    gpu_hours: Shown
    usage_gpu_hours: Shown
    cost: Shown
    usage_cost: Shown
    per_million: Shown
    usage_per_million: Shown


@dataclass(frozen=True)
class ModelRow:
    model_name: str
    gpu_hours: Shown
    busy: Shown
    idle_gpu_hours: Shown
    gpu_bill: Shown
    idle_cost: Shown
    engine_output_tokens: Shown
    seen_output_tokens: Shown
    unseen_output_tokens: Shown
    good_fraction: Shown
    per_million: Shown
    usage_per_million: Shown
    notes: tuple[str, ...]


def no_cost_reason(report: CostReport) -> str:
    if report.price_status == NO_PRICE:
        return "no price set: usage only"
    return "not priced (see the notes)"


def _tenant_row(total: TenantTotal, report: CostReport) -> TenantRow:
    no_cost = no_cost_reason(report)
    unattributed = total.tenant == UNATTRIBUTED
    note = "usage no tenant rule matched, and engine tokens the gateway did not see" if (
        unattributed
    ) else ""  # fmt: skip
    return TenantRow(
        tenant=total.tenant,
        kind="unattributed" if unattributed else "tenant",
        note=note,
        requests_ok=count_shown(total.requests_ok, NOT_SEEN),
        requests_failed=count_shown(total.requests_failed, NOT_SEEN),
        prompt_tokens=count_shown(total.prompt_tokens, NOT_SEEN),
        output_tokens=count_shown(total.output_tokens),
        good_output_tokens=interval_shown(
            total.good_output_tokens,
            "no good fraction for a model: no SLO selects it",
            kind="count",
        ),  # fmt: skip
        gpu_hours=hours_shown(total.gpu_hours),
        usage_gpu_hours=hours_shown(total.usage_gpu_hours, "busy fraction not measured"),
        cost=usd_shown(total.cost_usd, no_cost),
        usage_cost=usd_shown(
            total.usage_cost_usd,
            no_cost if total.cost_usd is None else "busy fraction not measured",
        ),
        per_million=interval_shown(
            total.cost_per_million_good_output_tokens_usd,
            total.cost_per_million_note or no_cost,
            kind="usd",
        ),
        usage_per_million=interval_shown(
            total.usage_cost_per_million_good_output_tokens_usd,
            total.cost_per_million_note or no_cost,
            kind="usd",
        ),
    )


def _basis_idle(report: CostReport, basis: Literal["allocation", "usage"]) -> float | None:
    recon = report.reconciliation if basis == "allocation" else report.usage_reconciliation
    return None if recon is None else recon.idle_usd


IDLE_ALLOCATION = (
    "on the allocation basis idle GPU-hours are inside each tenant's share; only platform "
    "cost no output token could carry is left here"
)


def _titled(shown: Shown, title: str) -> Shown:
    return shown if shown.missing else Shown(shown.text, title, value=shown.value)


def tenant_rows(report: CostReport) -> list[TenantRow]:
    """Each tenant, then the unattributed line, then idle, then the bill."""
    rows = [_tenant_row(total, report) for total in report.tenants]
    if report.scope:  # one tenant's view: no idle capacity, no fleet bill
        return rows
    idle_lines = [line for line in report.lines if line.kind == "idle"]
    idle_hours = [line.usage_gpu_hours for line in idle_lines]
    known_idle_hours = None if any(h is None for h in idle_hours) else sum(
        h for h in idle_hours if h is not None
    )  # fmt: skip
    no_cost = no_cost_reason(report)
    idle_allocation = _basis_idle(report, "allocation")
    idle_usage = _basis_idle(report, "usage")
    none = Shown("", missing=True)
    rows.append(
        TenantRow(
            tenant=IDLE, kind="idle",
            note="GPU-hours no request kept busy: inside the tenants' share on the allocation "
            "basis, its own line on the usage basis",
            requests_ok=none, requests_failed=none, prompt_tokens=none, output_tokens=none,
            good_output_tokens=none,
            gpu_hours=none,
            usage_gpu_hours=hours_shown(known_idle_hours, "busy fraction not measured"),
            cost=_titled(usd_shown(idle_allocation, no_cost), IDLE_ALLOCATION),
            usage_cost=usd_shown(idle_usage, no_cost),
            per_million=Shown(DASH, "idle capacity produced no output tokens", missing=True),
            usage_per_million=Shown(DASH, "idle capacity produced no output tokens",
                                    missing=True),
        )
    )  # fmt: skip
    gpu_bill = report.gpu_bill_usd
    rows.append(
        TenantRow(
            tenant="bill", kind="total", note="GPU bill + platform cost",
            requests_ok=none, requests_failed=none, prompt_tokens=none, output_tokens=none,
            good_output_tokens=none,
            gpu_hours=hours_shown(report.gpu_hours),
            usage_gpu_hours=none,
            cost=usd_shown(report.bill_usd if gpu_bill is not None else None, no_cost),
            usage_cost=usd_shown(
                report.usage_reconciliation.bill_usd if report.usage_reconciliation else None,
                no_cost if gpu_bill is None else "busy fraction not measured",
            ),
            per_million=none, usage_per_million=none,
        )
    )  # fmt: skip
    return rows


def model_rows(report: CostReport) -> list[ModelRow]:
    no_cost = no_cost_reason(report)
    return [
        ModelRow(
            model_name=m.model_name,
            gpu_hours=hours_shown(m.gpu_hours),
            busy=fraction_shown(m.busy_fraction),
            idle_gpu_hours=hours_shown(m.idle_gpu_hours),
            gpu_bill=usd_shown(m.gpu_bill_usd, no_cost),
            idle_cost=usd_shown(
                m.idle_cost_usd, no_cost if m.gpu_bill_usd is None else "busy fraction not measured"
            ),
            engine_output_tokens=count_shown(m.engine_output_tokens, "not read from the engines"),
            seen_output_tokens=count_shown(m.seen_output_tokens),
            unseen_output_tokens=count_shown(m.unseen_output_tokens),
            good_fraction=interval_shown(
                m.good_fraction, "no SLO selects this model", kind="fraction"
            ),  # fmt: skip
            per_million=interval_shown(
                m.cost_per_million_good_output_tokens_usd,
                m.cost_per_million_note or no_cost,
                kind="usd",
            ),  # fmt: skip
            usage_per_million=interval_shown(
                m.usage_cost_per_million_good_output_tokens_usd,
                m.cost_per_million_note or no_cost,
                kind="usd",
            ),
            notes=m.notes,
        )
        for m in report.models
    ]


@dataclass(frozen=True)
class ReconciliationLine:
    basis: str
    text: str
    ok: bool
    covers: str
    difference: float


def reconciliation_line(recon: Reconciliation) -> ReconciliationLine:
    parts = (recon.tenants_usd, recon.unattributed_usd, recon.idle_usd)
    sums = " + ".join(money_text(p) for p in parts)
    mark = "✓" if recon.ok else f"✗ (off by {recon.difference_usd:+.6f} USD)"
    text = f"tenants + unattributed + idle = bill: {sums} = {money_text(recon.bill_usd)} USD {mark}"
    return ReconciliationLine(recon.basis, text, recon.ok, recon.covers, recon.difference_usd)


def reconciliation_lines(report: CostReport) -> list[ReconciliationLine]:
    found = [report.reconciliation, report.usage_reconciliation]
    return [reconciliation_line(r) for r in found if r is not None]


@dataclass(frozen=True)
class Source:
    what: str
    where: str


def has_usage(review: CostReview) -> bool:
    """Whether the period holds any usage: traffic rows or GPU-hours of a model."""
    return bool(review.usage.rows) or any(
        m.gpu_hours is not None and m.gpu_hours > 0 for m in review.usage.models
    )


def price_status(review: CostReview) -> str:
    """The report's price status; with no usage (no model to price) whether a price is
    entered at all, so an entered price never reads "no price set"."""
    if has_usage(review):
        return review.report.price_status
    return NO_PRICE if review.price_source == NO_PRICE else "priced"


def findings(review: CostReview) -> list[str]:
    """Rules that matched nothing, and usage two or more rules matched."""
    attribution = review.attribution
    found = [f"rule {rule.name} matched no usage" for rule in attribution.unmatched_rules]
    found += [overlap.describe() for overlap in attribution.overlaps]
    return found


def report_notes(review: CostReview) -> list[str]:
    """The report's notes, less the rule findings shown on their own."""
    shown = set(findings(review))
    return [note for note in review.report.notes if note not in shown]


def sources(review: CostReview) -> list[Source]:
    """Where every figure came from."""
    backend = "embedded store (local)" if review.backend == "local" else "Prometheus"
    found = [
        Source("usage", f"{backend}: increase() of the gateway's per-tenant counters and the "
               "engines' counters over the period (counter resets added back)"),
        Source("price per GPU-hour", review.price_source),
    ]  # fmt: skip
    price = FleetPrice.objects.filter(fleet=review.fleet).first()
    if price is not None and price.platform_cost_usd_per_month is not None:
        hours = (review.end - review.start).total_seconds() / 3600
        found.append(
            Source(
                "platform cost",
                f"{price.platform_cost_usd_per_month} USD per month entered, prorated to "
                f"{hours:.1f} h of a {MONTH_HOURS:.1f} h month",
            )
        )
    else:
        found.append(Source("platform cost", "none set"))
    for use in review.usage.models:
        found.append(Source(f"{use.model_name}: GPU-hours", use.gpu_hours_source))
        found.append(Source(f"{use.model_name}: busy fraction", use.busy_source))
        found.append(Source(f"{use.model_name}: good fraction", use.good_source))
    for note in review.usage.notes:
        found.append(Source("usage note", note))
    return found


def download_name(fleet: Fleet, start: datetime, end: datetime, extension: str) -> str:
    stamp = f"{start.astimezone(UTC):%Y%m%dT%H%MZ}-{end.astimezone(UTC):%Y%m%dT%H%MZ}"
    return f"fleetscope-cost-{fleet.slug}-{stamp}.{extension}"


def export_dict(review: CostReview) -> dict[str, Any]:
    """The JSON export: the report (`capacity.cost.report_dict`) and where it came from."""
    from capacity.cost import report_dict

    return {
        "fleet": review.fleet.slug,
        "start": iso(review.start),
        "end": iso(review.end),
        "backend": review.backend,
        "price_source": review.price_source,
        "has_usage": has_usage(review),
        **report_dict(review.report),
        "sources": [{"what": s.what, "where": s.where} for s in sources(review)],
    }
