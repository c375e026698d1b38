"""`slo_status` as text: one block per SLO, each figure with its precision, and with
`explain` where it came from (metric names, edges, events, window, backend, PromQL)."""

from __future__ import annotations

from collections.abc import Sequence

from slo.evaluation.figures import (
    STATE_LABELS,
    Interval,
    ObjectiveStatus,
    SloStatus,
    duration_text,
)


def percent(interval: Interval | None, digits: int = 3) -> str:
    if interval is None:
        return "no data"
    if interval.is_exact:
        return f"{interval.lower * 100:.{digits}f}%"
    return f"{interval.lower * 100:.{digits}f}% .. {interval.upper * 100:.{digits}f}% (interval)"


def rate(interval: Interval | None, unit: str) -> str:
    if interval is None:
        return "no data"
    if interval.is_exact:
        return f"{interval.lower:.4g} {unit}"
    return f"bounds {interval.lower:.4g} .. {interval.upper:.4g} {unit}"


def _objective_lines(status: ObjectiveStatus, explain: bool) -> list[str]:
    goal = f"<= {status.threshold_seconds:g} s" if status.threshold_seconds is not None else ""
    head = f"  {status.label} {goal} at {status.target * 100:g}%: "
    if status.attainment is None:
        return [head + f"no data ({status.unavailable or status.reason})"]
    events = f"{status.events:.0f} {status.events_name}" if status.events else ""
    lines = [
        head + f"{percent(status.attainment)} [{status.verdict}] over {events}",
        f"    {status.reason}",
        f"    budget remaining {percent(status.budget_remaining, 1)}; state {status.state}"
        + (
            f"; exhausted in {duration_text(status.exhaustion_seconds)} at the last day's burn"
            if status.exhaustion_seconds
            else ""
        ),
    ]
    for row in status.burn:
        burn = (
            "no data"
            if row.long.burn is None or row.short.burn is None
            else f"{rate(row.long.burn, 'x')} / {rate(row.short.burn, 'x')}"
        )
        lines.append(
            f"    burn {row.pair} ({row.severity}, fires at {row.factor:.3g}x): {burn}: "
            f"{row.firing}{'; ' + row.note if row.note else ''}"
        )
    if status.slow is not None:
        lines.append(f"    slow rule {status.slow.window_label}: {status.slow.firing}; "
                     f"{status.slow.note}")  # fmt: skip
    if status.replicas:
        worst = status.replicas[0]
        lines.append(
            f"    worst replica {worst.instance}: {percent(worst.attainment)} "
            f"over {worst.events:.0f} {status.events_name} [{worst.verdict}]"
        )
    if explain:
        p = status.provenance
        lines.append(f"    from: backend {p.backend}; window {p.window}")
        lines.append(f"          metrics {', '.join(p.metric_names) or 'none'}")
        if p.edges_used:
            lines.append(f"          bucket edges used {', '.join(f'{e:g}' for e in p.edges_used)}")
        lines.extend(f"          promql {q}" for q in p.queries)
        lines.extend(f"          note {n}" for n in p.notes)
    return lines


def status_text(statuses: Sequence[SloStatus], *, explain: bool = False) -> str:
    lines: list[str] = []
    for status in statuses:
        lines.append(
            f"{status.fleet}/{status.slug} ({status.name}): {STATE_LABELS[status.state]}; "
            f"budget remaining {percent(status.budget_remaining, 1)}; {status.window_note}"
        )
        for objective in status.objectives:
            lines.extend(_objective_lines(objective, explain))
        goodput = status.goodput
        if goodput is not None:
            lines.append(
                f"  goodput {rate(goodput.requests_per_second, 'req/s')} "
                f"({percent(goodput.fraction, 1)} of finished requests); good output tokens "
                f"{rate(goodput.good_output_tokens_per_second, 'tokens/s')}"
            )
            if explain and goodput.note:
                lines.append(f"    {goodput.note}")
            lines.extend(f"    left out: {why}" for why in goodput.left_out)
        lines.append("")
    return "\n".join(lines)
