"""Cost reports from a fleet's stored rules and prices and its measured usage, and the
monthly report the scheduler stores.

A report is always built from what was read: usage by `capacity.usage`, tenant rules and
prices from the database. No price set means usage only; GPU-hours the fleet cannot
measure leave that model unpriced with the reason, never at zero.
"""

from __future__ import annotations

import calendar
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction

from capacity.cost import (
    Attribution,
    CostReport,
    ModelBill,
    TenantRule,
    UsageRow,
    allocate,
    attribute,
    report_csv,
    report_json,
    tenant_rule_check,
)
from capacity.figures import Quantity
from capacity.models import CostReportRecord, FleetPrice
from capacity.opencost import opencost_gpu_price
from capacity.usage import PeriodUsage, period_usage
from inventory.models import Fleet
from queries import Backend

# An average month, so a platform cost entered per month prorates to any period.
MONTH_HOURS = 365.25 * 24 / 12


@dataclass(frozen=True)
class CostReview:
    fleet: Fleet
    start: datetime
    end: datetime
    backend: str
    usage: PeriodUsage
    attribution: Attribution
    report: CostReport
    price_source: str


def _price(fleet: Fleet) -> FleetPrice | None:
    return FleetPrice.objects.filter(fleet=fleet).first()


def _rules(fleet: Fleet) -> list[TenantRule]:
    return [
        tenant_rule_check(r.tenant, r.kind, r.pattern, label=r.label or "tenant", order=r.order)
        for r in fleet.tenant_rules.all()
    ]


def cost_review(
    fleet: Fleet, *, start: datetime, end: datetime, backend: Backend, goodput: bool = True
) -> CostReview:
    """The cost report of `fleet` over [start, end); `goodput=False` skips the SLO
    evaluation, so per-good-token figures are unknown, and the check of how much of the
    period the store holds (a trend bar needs only the split; its page says the rest)."""
    price = _price(fleet)
    gpus_per_replica = price.gpus_per_replica if price else None
    usage = period_usage(
        fleet,
        start=start,
        end=end,
        backend=backend,
        gpus_per_replica=gpus_per_replica,
        goodput=goodput,
        coverage=goodput,
    )
    rows = [
        UsageRow(r.model_name, dict(r.labels), r.requests_ok, r.requests_failed, r.prompt_tokens,
                 r.output_tokens, source=r.source)
        for r in usage.rows
    ]  # fmt: skip
    attribution = attribute(rows, _rules(fleet))
    per_hour = None
    price_source = "no price set"
    if price is not None and price.price_per_gpu_hour_usd is not None:
        price_source = f"entered for fleet {fleet.slug}"
        per_hour = Quantity("price_per_gpu_hour_usd", float(price.price_per_gpu_hour_usd),
                            "usd_per_gpu_hour", "entered", price_source, price.note)  # fmt: skip
    elif settings.PROMETHEUS_URL and usage.end > usage.start:
        opencost = opencost_gpu_price(fleet, start=usage.start, end=usage.end)
        if opencost.price is not None:
            per_hour = opencost.price
            price_source = opencost.price.source
        else:
            price_source = f"no price set; no OpenCost price: {opencost.reason}"
    bills = []
    for use in usage.models:
        measured = use.gpu_hours is not None
        reason = "" if measured or per_hour is None else f"GPU-hours {use.gpu_hours_source}"
        bills.append(
            ModelBill(
                use.model_name,
                use.gpu_hours or 0.0,  # unused when unpriced: no cost is computed from it
                use.busy_fraction,
                per_hour if measured else None,
                use.engine_output_tokens,
                use.good_fraction,
                unpriced_reason=reason,
            )
        )
    platform = None
    if price is not None and price.platform_cost_usd_per_month is not None:
        hours = (usage.end - usage.start).total_seconds() / 3600
        amount = float(price.platform_cost_usd_per_month) * hours / MONTH_HOURS
        source = (
            f"{price.platform_cost_usd_per_month} USD per month entered, "
            f"prorated to {hours:.1f} h of a {MONTH_HOURS:.1f} h month"
        )
        platform = Quantity("platform_cost_usd", amount, "usd", "entered", source)
    period = f"{usage.start:%Y-%m-%dT%H:%MZ} .. {usage.end:%Y-%m-%dT%H:%MZ}"
    report = allocate(bills, attribution, platform_cost_usd=platform, period=period)
    if usage.coverage:  # first among the notes, so the exports carry it too
        report = replace(report, notes=(usage.coverage, *report.notes))
    return CostReview(fleet, usage.start, usage.end, backend, usage, attribution, report,
                      price_source)  # fmt: skip


def month_bounds(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    days = calendar.monthrange(year, month)[1]
    return start, start + timedelta(days=days)


def previous_month(now: datetime) -> tuple[datetime, datetime]:
    first = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    last_month = first - timedelta(days=1)
    return month_bounds(last_month.year, last_month.month)


def cost_report_store(
    *, fleet: Fleet, start: datetime, end: datetime, backend: Backend
) -> CostReportRecord | None:
    """Build and store the report of [start, end), replacing one stored for the same
    period; None (nothing stored) when the backend holds no usage of the fleet in it."""
    review = cost_review(fleet, start=start, end=end, backend=backend)
    if not review.usage.rows and not review.usage.models:
        return None
    content = json.loads(report_json(review.report))
    with transaction.atomic():
        record, _ = CostReportRecord.objects.update_or_create(
            fleet=fleet, period_start=start, period_end=end,
            defaults={"content": content, "csv": report_csv(review.report)},
        )  # fmt: skip
    return record


def monthly_reports_store(now: datetime | None = None, backend: Backend | None = None) -> int:
    """Store last month's report for every fleet that has none yet; how many were stored.
    Runs hourly, so a missed tick (a restart at midnight) is made up within the hour; a
    month the backend holds nothing of is tried again next hour, never stored empty."""
    start, end = previous_month(now or datetime.now(UTC))
    chosen: Backend = backend or ("prometheus" if settings.PROMETHEUS_URL else "local")
    stored = 0
    for fleet in Fleet.objects.all():
        if CostReportRecord.objects.filter(
            fleet=fleet, period_start=start, period_end=end
        ).exists():
            continue
        if cost_report_store(fleet=fleet, start=start, end=end, backend=chosen) is not None:
            stored += 1
    return stored
