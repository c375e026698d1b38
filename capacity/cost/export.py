"""A cost report as a table, CSV and JSON.

One row per line (tenant x model, unattributed, idle), every column with its unit in its
name, intervals as `_lower` / `_upper` columns. Missing is never zero: an unknown figure is
an empty CSV cell, NaN in the DataFrame, and `null` in JSON (which never holds NaN).
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pandas as pd

from capacity.cost.report import CostLine, CostReport, ModelSummary, Reconciliation, TenantTotal
from slo.evaluation import Interval

INTERVALS = (
    "good_output_tokens",
    "cost_per_million_good_output_tokens_usd",
    "usage_cost_per_million_good_output_tokens_usd",
)
TEXT_COLUMNS = frozenset({"tenant", "model_name", "kind", "reason", "cost_per_million_note"})


def _columns(names: list[str]) -> tuple[str, ...]:
    found: list[str] = []
    for name in names:
        found += [f"{name}_lower", f"{name}_upper"] if name in INTERVALS else [name]
    return tuple(found)


_MODEL_COLUMNS = ("busy_fraction", "price_per_gpu_hour_usd")
LINE_COLUMNS: tuple[str, ...] = (
    *_columns([f.name for f in fields(CostLine)]),
    *_MODEL_COLUMNS,
)
TENANT_COLUMNS: tuple[str, ...] = tuple(
    column for column in _columns([f.name for f in fields(TenantTotal)]) if column != "model_names"
) + ("model_names",)


def _flat(item: CostLine | TenantTotal | ModelSummary | Reconciliation) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for f in fields(item):
        value = getattr(item, f.name)
        if isinstance(value, Interval) or f.name in INTERVALS or f.name == "good_fraction":
            found[f"{f.name}_lower"] = None if value is None else value.lower
            found[f"{f.name}_upper"] = None if value is None else value.upper
        elif isinstance(value, tuple):
            found[f.name] = list(value) if f.name == "notes" else ";".join(value)
        else:
            found[f.name] = value
    return found


def _line_rows(report: CostReport) -> list[dict[str, Any]]:
    models = {m.model_name: m for m in report.models}
    rows = []
    for line in report.lines:
        row = _flat(line)
        model = models.get(line.model_name)
        row["busy_fraction"] = None if model is None else model.busy_fraction
        row["price_per_gpu_hour_usd"] = None if model is None else model.price_per_gpu_hour_usd
        rows.append(row)
    return rows


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(columns))
    for column in columns:
        if column not in TEXT_COLUMNS and column != "model_names":
            frame[column] = frame[column].astype("float64")
    return frame


def report_frame(report: CostReport) -> pd.DataFrame:
    """One row per tenant x model line, plus the unattributed and idle lines."""
    return _frame(_line_rows(report), LINE_COLUMNS)


def tenant_frame(report: CostReport) -> pd.DataFrame:
    """One row per tenant total (and one for "unattributed")."""
    return _frame([_flat(total) for total in report.tenants], TENANT_COLUMNS)


def report_csv(report: CostReport) -> str:
    """The lines as CSV; an unknown figure is an empty cell."""
    return str(report_frame(report).to_csv(index=False, lineterminator="\n"))


def report_dict(report: CostReport) -> dict[str, Any]:
    """The whole report as JSON-ready data (None for every unknown figure)."""
    return {
        "period": report.period,
        "tenant_scope": report.scope or None,
        "price_status": report.price_status,
        "gpu_hours": report.gpu_hours,
        "gpu_bill_usd": report.gpu_bill_usd,
        "platform_cost_usd": report.platform_cost_usd,
        "bill_usd": report.bill_usd,
        "idle_cost_usd": report.idle_cost_usd,
        "reconciliation": None if report.reconciliation is None else _flat(report.reconciliation),
        "usage_reconciliation": (
            None if report.usage_reconciliation is None else _flat(report.usage_reconciliation)
        ),
        "models": [_flat(model) for model in report.models],
        "tenants": [_flat(total) for total in report.tenants],
        "lines": _line_rows(report),
        "notes": list(report.notes),
    }


def report_json(report: CostReport, indent: int | None = 2) -> str:
    """The whole report as JSON: `null` for unknown figures, never NaN or Infinity."""
    return json.dumps(report_dict(report), indent=indent, allow_nan=False)
