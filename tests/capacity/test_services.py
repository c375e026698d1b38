"""Cost reports built from a simulated fleet's usage, its tenant rules and its price, and
the monthly reports the scheduler stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from capacity.models import CostReportRecord, FleetPrice
from capacity.services import (
    cost_review,
    month_bounds,
    monthly_reports_store,
    previous_month,
)
from inventory.models import Fleet
from tests.capacity.conftest import PRICE_PER_GPU_HOUR_USD, SimTruth

pytestmark = pytest.mark.django_db


def _whole(truth: SimTruth) -> tuple[datetime, datetime]:
    return (
        datetime.fromtimestamp(truth.start - 60, UTC),
        datetime.fromtimestamp(truth.end, UTC),
    )


def test_tenant_costs_plus_unattributed_plus_idle_equal_the_bill(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    start, end = _whole(sim_truth)
    review = cost_review(sim_fleet, start=start, end=end, backend="local")
    report = review.report
    assert report.price_status == "priced"
    assert report.reconciliation is not None and report.reconciliation.ok
    assert report.usage_reconciliation is not None and report.usage_reconciliation.ok
    gpu_hours = sum(use.gpu_hours or 0 for use in review.usage.models)
    assert report.gpu_bill_usd == pytest.approx(gpu_hours * PRICE_PER_GPU_HOUR_USD)
    # umbrella and the prober have no rule: their usage is unattributed, never dropped
    unattributed = report.tenant("unattributed")
    assert unattributed is not None and unattributed.output_tokens
    assert report.tenant("umbrella") is None
    for tenant in ("acme", "globex", "hooli", "initech"):
        total = report.tenant(tenant)
        assert total is not None and total.cost_usd is not None and total.cost_usd > 0


def test_cost_per_million_good_tokens_is_an_interval_from_goodput_bounds(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    start, end = _whole(sim_truth)
    report = cost_review(sim_fleet, start=start, end=end, backend="local").report
    acme = report.tenant("acme")
    assert acme is not None and acme.cost_usd is not None
    per_million = acme.cost_per_million_good_output_tokens_usd
    good = acme.good_output_tokens
    assert per_million is not None and good is not None
    # The chat SLO's goodput is bounds (two objectives): the cost per good token is too.
    assert good.lower < good.upper and per_million.lower < per_million.upper
    assert per_million.lower == pytest.approx(acme.cost_usd / good.upper * 1e6)


def test_without_a_price_the_report_shows_usage_and_no_cost(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    FleetPrice.objects.filter(fleet=sim_fleet).delete()
    start, end = _whole(sim_truth)
    review = cost_review(sim_fleet, start=start, end=end, backend="local")
    assert review.report.price_status == "no price set"
    assert review.price_source == "no price set"
    acme = review.report.tenant("acme")
    assert acme is not None and acme.output_tokens and acme.cost_usd is None


def test_a_model_whose_gpu_hours_are_unmeasured_is_left_unpriced_with_the_reason(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    sim_fleet.endpoints.filter(kind="dcgm").update(enabled=False)
    start, end = _whole(sim_truth)
    report = cost_review(sim_fleet, start=start, end=end, backend="local").report
    assert report.price_status == "not priced"  # a price is set: "no price set" would be false
    assert any(
        note.startswith("GPU-hours not measured") and "for llama-3.1-8b-instruct" in note
        for note in report.notes
    ), report.notes
    assert report.gpu_bill_usd is None
    acme = report.tenant("acme")
    assert acme is not None and acme.cost_usd is None and acme.output_tokens


def test_the_platform_cost_is_prorated_to_the_period(sim_fleet: Fleet, sim_truth: SimTruth) -> None:
    start, end = _whole(sim_truth)
    report = cost_review(sim_fleet, start=start, end=end, backend="local").report
    hours = (end - start).total_seconds() / 3600
    assert report.platform_cost_usd == pytest.approx(10.0 * hours)  # 7305 USD / 730.5 h


def test_last_months_report_is_stored_once_and_an_empty_month_not_at_all(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    recorded = datetime.fromtimestamp(sim_truth.end, UTC)
    start, _ = month_bounds(recorded.year, recorded.month)
    next_month = start + timedelta(days=32)
    assert monthly_reports_store(now=next_month, backend="local") == 1
    assert monthly_reports_store(now=next_month, backend="local") == 0  # never rebuilt
    record = CostReportRecord.objects.get(fleet=sim_fleet)
    assert record.period_start == start
    assert record.content["reconciliation"]["ok"] is True
    assert record.csv.splitlines()[0].startswith("kind,") or "tenant" in record.csv.splitlines()[0]
    # The month before holds no samples: nothing is stored, and the next hour tries again.
    assert monthly_reports_store(now=start, backend="local") == 0


def test_previous_month_is_the_whole_calendar_month_in_utc() -> None:
    start, end = previous_month(datetime(2026, 3, 1, 0, 30, tzinfo=UTC))
    assert (start, end) == (datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC))
    start, end = previous_month(datetime(2026, 1, 15, tzinfo=UTC))
    assert (start, end) == (datetime(2025, 12, 1, tzinfo=UTC), datetime(2026, 1, 1, tzinfo=UTC))
