"""The plain-text table `manage.py cost_report` prints."""

from __future__ import annotations

from collections.abc import Sequence

from capacity.cost import NO_PRICE
from capacity.pages.cost.shown import hours_shown, usd_shown
from capacity.pages.cost.tables import (
    findings,
    has_usage,
    model_rows,
    no_cost_reason,
    price_status,
    reconciliation_lines,
    report_notes,
    tenant_rows,
)
from capacity.pages.params import utc_text
from capacity.services import CostReview


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def report_text(review: CostReview) -> str:
    """The report as plain text: the period, the bill, tenants, models, reconciliation."""
    report = review.report
    out = [
        f"Cost of {review.fleet.slug}: {utc_text(review.start)} to {utc_text(review.end)} "
        f"({'embedded store' if review.backend == 'local' else 'Prometheus'})",
        f"Price: {price_status(review)} ({review.price_source})",
    ]
    if not has_usage(review):
        out.append("No usage in this period: nothing to split.")
        return "\n".join(out) + "\n"
    if report.price_status == NO_PRICE:
        out.append("No price set: usage only (set one in the admin, Fleet prices).")
    out.append("")
    no_cost = no_cost_reason(report)
    bill = [
        ("GPU-hours", hours_shown(report.gpu_hours).text),
        ("GPU bill (USD)", usd_shown(report.gpu_bill_usd, no_cost).text),
        ("platform cost (USD)", usd_shown(report.platform_cost_usd, "none set").text),
        ("idle cost (USD, usage basis)", usd_shown(report.idle_cost_usd, no_cost).text),
        ("total (USD)", usd_shown(report.bill_usd if report.gpu_bill_usd is not None else None,
                                  no_cost).text),
    ]  # fmt: skip
    out.append(text_table(["bill", "value"], [list(b) for b in bill]))
    out.append("")
    headers = ["tenant", "requests ok", "failed", "output tokens", "good output tokens",
               "GPU-h", "cost USD", "usage-basis USD", "USD / 1M good tokens"]  # fmt: skip
    rows = [
        [r.tenant, r.requests_ok.text, r.requests_failed.text, r.output_tokens.text,
         r.good_output_tokens.text, r.gpu_hours.text or r.usage_gpu_hours.text, r.cost.text,
         r.usage_cost.text, r.per_million.text]
        for r in tenant_rows(report)
    ]  # fmt: skip
    out.append(text_table(headers, rows))
    out.append("")
    headers = ["model", "GPU-h", "busy", "idle GPU-h", "idle USD", "engine tokens",
               "gateway tokens", "good fraction", "USD / 1M good tokens"]  # fmt: skip
    rows = [
        [m.model_name, m.gpu_hours.text, m.busy.text, m.idle_gpu_hours.text, m.idle_cost.text,
         m.engine_output_tokens.text, m.seen_output_tokens.text, m.good_fraction.text,
         m.per_million.text]
        for m in model_rows(report)
    ]  # fmt: skip
    out.append(text_table(headers, rows))
    out.append("")
    for line in reconciliation_lines(report):
        out.append(f"{line.basis} basis: {line.text}")
    notes = findings(review) + report_notes(review)
    if notes:
        out.append("")
        out.extend(f"- {note}" for note in notes)
    return "\n".join(out) + "\n"
