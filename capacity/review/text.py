"""Plain text for `manage.py capacity`: one section per ledger, each line with its value,
unit, formula and origin."""

from __future__ import annotations

from collections.abc import Sequence

from capacity.figures import Ledger, Quantity, bytes_text
from capacity.review.assemble import CapacityReview
from capacity.review.checks import Finding


def value_text(q: Quantity) -> str:
    if not q.known:
        return q.origin if q.origin == "needs measurement" else "unknown"
    value = float(q.value or 0.0)
    if q.unit == "bytes":
        return f"{value:,.0f} bytes ({bytes_text(value)})"
    if q.unit == "fraction":
        return f"{value:.1%}"
    if value.is_integer():
        return f"{value:,.0f} {q.unit}"
    return f"{value:,.3f} {q.unit}"


def ledger_text(ledger: Ledger) -> list[str]:
    title = ledger.name.upper() + (" (lower bound)" if ledger.lower_bound else "")
    out = [title, "-" * len(title)]
    for line in ledger.lines:
        q = line.quantity
        origin = q.origin + (f": {q.source}" if q.source else "")
        out.append(f"  {line.label}: {value_text(q)}")
        out.append(f"      = {line.formula or q.key}   [{origin}]")
        if q.note:
            out.append(f"      note: {q.note}")
    out.extend(f"  * {note}" for note in ledger.notes)
    return out


def findings_text(title: str, findings: Sequence[Finding], yes: str, no: str) -> list[str]:
    out = [title, "-" * len(title)]
    for f in findings:
        state = "n/a (needs measurement)" if f.state is None else (yes if f.state else no)
        out.append(f"  [{state}] {f.name}: {f.detail}")
    if not findings:
        out.append("  none")
    return out


def render_text(review: CapacityReview, provenance: Sequence[str] = ()) -> str:
    out: list[str] = []
    if provenance:
        out += ["INPUTS", "------", *(f"  {p}" for p in provenance), ""]
    for ledger in review.ledgers:
        out += [*ledger_text(ledger), ""]
    total = review.r_total_replicas
    out.append(f"REPLICAS REQUIRED: {total if total is not None else 'needs measurement'}")
    out.append("")
    out += ["SENSITIVITY (R_total at -10% / +10% of each input)", "-" * 50]
    for s in review.sensitivity:
        out.append(
            f"  {s.input_key} = {s.base_value:g}: R_total {s.r_total_minus_10_replicas} / "
            f"{s.r_total_plus_10_replicas} (unrounded change "
            f"{s.change_minus_10_replicas:+.2f} / "
            f"{s.change_plus_10_replicas:+.2f})"
        )
    if not review.sensitivity:
        out.append("  needs lambda_peak, mu_good, rho_target and the reserves")
    out.append("")
    out += [*findings_text("WHAT WOULD FLIP THE DESIGN", review.flips, "FLIPS", "holds"), ""]
    out += [*findings_text("SANITY CHECKS", review.sanity_checks, "pass", "FAIL"), ""]
    out += [*findings_text("CLASSIC MISTAKES", review.mistakes, "FLAGGED", "ok"), ""]
    out += ["THRESHOLDS", "----------"]
    out += [f"  {n} = {v:g} {u}: {r}" for n, v, u, r in review.thresholds]
    if review.notes:
        out += ["", "NOTES", "-----", *(f"  * {n}" for n in review.notes)]
    return "\n".join(out) + "\n"
