"""The cost pages and `manage.py cost_report`: the period, the tables, the trend and the
text table.

    from capacity.pages import cost as cost_pages
    period = cost_pages.period_parse(request.GET)
"""

from __future__ import annotations

from capacity.pages.cost.shown import hours_shown, money_text, usd_shown
from capacity.pages.cost.tables import (
    download_name,
    export_dict,
    findings,
    has_usage,
    model_rows,
    price_status,
    reconciliation_lines,
    report_notes,
    sources,
    tenant_rows,
)
from capacity.pages.cost.text import report_text
from capacity.pages.cost.trend import (
    bucket_size,
    bucket_text,
    buckets,
    trend,
    trend_basis,
    trend_figure,
)
from capacity.pages.params import (
    ParameterError,
    Period,
    backend_parse,
    iso,
    period_check,
    period_parse,
    time_parse,
    utc_text,
)

__all__ = [
    "ParameterError",
    "Period",
    "backend_parse",
    "bucket_size",
    "bucket_text",
    "buckets",
    "download_name",
    "export_dict",
    "findings",
    "has_usage",
    "hours_shown",
    "iso",
    "model_rows",
    "money_text",
    "period_check",
    "period_parse",
    "price_status",
    "reconciliation_lines",
    "report_notes",
    "report_text",
    "sources",
    "tenant_rows",
    "time_parse",
    "trend",
    "trend_basis",
    "trend_figure",
    "usd_shown",
    "utc_text",
]
