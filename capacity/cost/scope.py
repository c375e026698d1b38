"""A report scoped to one tenant: its own lines and totals, and nothing of the others.

Who may see which tenant is the access-control issue's to enforce; the scope exists now so
every cost figure a tenant is shown comes from the same report a fleet owner sees, cut
down, never recomputed differently. Fleet-wide figures (the bill, idle capacity, other
tenants, the per-model summary, the reconciliation) are withheld, and the notes say so.
"""

from __future__ import annotations

from dataclasses import replace

from capacity.cost.allocation import FAILED_NOTE, GOOD_NOTE
from capacity.cost.report import CostReport
from capacity.cost.tenants import UNATTRIBUTED, CostInputError

SCOPED_NOTE = (
    "scoped to tenant {tenant}: other tenants, idle capacity, the fleet's bill and its "
    "reconciliation are not shown"
)


def tenant_view(report: CostReport, tenant: str) -> CostReport:
    total = report.tenant(tenant)
    if total is None or tenant == UNATTRIBUTED:
        known = ", ".join(t.tenant for t in report.tenants if t.tenant != UNATTRIBUTED)
        raise CostInputError(
            "tenant", f"no tenant {tenant[:80]!r} in this period (tenants: {known or 'none'})"
        )
    return replace(
        report,
        lines=tuple(ln for ln in report.lines if ln.tenant == tenant and ln.kind == "tenant"),
        tenants=(total,),
        models=(),
        gpu_hours=total.gpu_hours,
        gpu_bill_usd=total.gpu_cost_usd,
        platform_cost_usd=total.platform_cost_usd,
        bill_usd=total.cost_usd,
        idle_cost_usd=None,
        reconciliation=None,
        usage_reconciliation=None,
        notes=(SCOPED_NOTE.format(tenant=tenant), FAILED_NOTE, GOOD_NOTE),
        scope=tenant,
    )
