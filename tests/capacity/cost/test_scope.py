"""One tenant's view of a report: its own lines, nothing of the others."""

from __future__ import annotations

import pytest

from capacity.cost import CostInputError, CostReport, allocate, tenant_view
from tests.capacity.cost.scenario import attribution, bills, platform


def build_report() -> CostReport:
    return allocate(bills(), attribution(), platform_cost_usd=platform(), period="Nov")


def test_a_tenant_view_keeps_only_that_tenants_lines_and_totals() -> None:
    report = build_report()
    tenant = next(t.tenant for t in report.tenants if t.tenant != "unattributed")
    scoped = tenant_view(report, tenant)
    assert [t.tenant for t in scoped.tenants] == [tenant]
    assert {ln.tenant for ln in scoped.lines} == {tenant}
    total = report.tenant(tenant)
    assert total is not None and scoped.bill_usd == total.cost_usd
    assert scoped.models == () and scoped.idle_cost_usd is None
    assert scoped.reconciliation is None and scoped.usage_reconciliation is None
    assert scoped.notes[0].startswith(f"scoped to tenant {tenant}:")


@pytest.mark.parametrize("tenant", ["nobody", "unattributed"])
def test_a_tenant_not_in_the_report_is_refused_with_the_tenants_it_has(tenant: str) -> None:
    with pytest.raises(CostInputError, match=f"no tenant '{tenant}' in this period"):
        tenant_view(build_report(), tenant)
