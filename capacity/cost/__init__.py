"""Cost per 1M good output tokens per tenant and model: plain inputs in, a report out.

    from capacity.cost import TenantRule, UsageRow, ModelBill, attribute, allocate
    attribution = attribute(rows, rules)
    report = allocate(bills, attribution, platform_cost_usd=platform, period="2026-11")
    report.reconciliation.ok, report_csv(report), report_json(report)

No Django and no database: the callers read rules, prices and usage and pass dataclasses.
"""

from __future__ import annotations

from capacity.cost.allocation import IDLE, NO_PRICE, PLATFORM, allocate
from capacity.cost.bill import ModelBill
from capacity.cost.export import (
    LINE_COLUMNS,
    TENANT_COLUMNS,
    report_csv,
    report_dict,
    report_frame,
    report_json,
    tenant_frame,
)
from capacity.cost.report import (
    CostLine,
    CostReport,
    ModelSummary,
    Reconciliation,
    TenantTotal,
)
from capacity.cost.scope import tenant_view
from capacity.cost.tenants import (
    KIND_PRECEDENCE,
    UNATTRIBUTED,
    AttributedRow,
    Attribution,
    CostInputError,
    Overlap,
    TenantRule,
    TenantRuleError,
    UsageRow,
    attribute,
    tenant_rule_check,
)

__all__ = [
    "tenant_view",
    "IDLE",
    "KIND_PRECEDENCE",
    "LINE_COLUMNS",
    "NO_PRICE",
    "PLATFORM",
    "TENANT_COLUMNS",
    "UNATTRIBUTED",
    "Attribution",
    "AttributedRow",
    "CostInputError",
    "CostLine",
    "CostReport",
    "ModelBill",
    "ModelSummary",
    "Overlap",
    "Reconciliation",
    "TenantRule",
    "TenantRuleError",
    "TenantTotal",
    "UsageRow",
    "allocate",
    "attribute",
    "report_csv",
    "report_dict",
    "report_frame",
    "report_json",
    "tenant_frame",
    "tenant_rule_check",
]
