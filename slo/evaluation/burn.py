"""Burn rates per window pair, the slow low-traffic rule, the error budget and when it runs
out: all from attainment intervals, so an interval in gives an interval out and a pair
fires only when even the kinder bound says so ("maybe" when only the harsher one does)."""

from __future__ import annotations

import math
from collections.abc import Callable

from slo.burn_policy import PAIRS, SLOW_PAIR, SLOW_WINDOW_SECONDS, BurnPair, label
from slo.evaluation.figures import (
    BurnRow,
    Firing,
    Interval,
    SlowRule,
    WindowBurn,
    duration_text,
)

# (attainment, events) over a window of this many seconds; None when it holds no events.
Reader = Callable[[float], tuple[Interval | None, float | None]]


def bad_ratio(attainment: Interval) -> Interval:
    return Interval(1.0 - attainment.upper, 1.0 - attainment.lower)


def window_burn(seconds: float, read: Reader, target: float) -> WindowBurn:
    attainment, events = read(seconds)
    if attainment is None:
        return WindowBurn(seconds, label(seconds), events, None, None)
    bad = bad_ratio(attainment)
    return WindowBurn(seconds, label(seconds), events, bad, bad.scaled(1.0 / (1.0 - target)))


def _crossing(windows: tuple[WindowBurn, ...], threshold: float) -> Firing:
    bad = [w.bad_ratio for w in windows]
    if any(b is None for b in bad):
        return "no-data"
    if all(b is not None and b.lower > threshold for b in bad):
        return "firing"
    if all(b is not None and b.upper > threshold for b in bad):
        return "maybe"
    return "quiet"


def burn_row(
    pair: BurnPair, read: Reader, *, target: float, window_days: int, min_requests: int,
    held_seconds: float = math.inf, requests: Callable[[float], float | None] | None = None,
) -> BurnRow:  # fmt: skip
    """`requests` counts requests over a window when the objective's own events are not
    requests (ITL counts token gaps: a hundred gaps can be one request)."""
    long = window_burn(pair.long_seconds, read, target)
    short = window_burn(pair.short_seconds, read, target)
    factor = pair.factor(window_days)
    firing = _crossing((long, short), pair.threshold(window_days, target))
    note = ""
    in_long = long.events if requests is None else requests(pair.long_seconds)
    if firing in ("firing", "maybe") and (in_long or 0.0) < min_requests:
        verb = "page" if pair.severity == "page" else "raise a ticket"
        note = f"too few requests to {verb}: {in_long or 0:.0f} in {long.label}"
        firing = "too-few"
    elif firing == "no-data":
        note = f"no events in {short.label if long.bad_ratio else long.label}"
    if held_seconds < pair.long_seconds:
        held = f"only {duration_text(held_seconds)} of its {long.label} window is held"
        note = f"{note}; {held}" if note else held
    return BurnRow(pair.name, pair.severity, factor, long, short, firing, note)


def burn_rows(
    read: Reader, *, target: float, window_days: int, min_requests: int,
    held_seconds: float = math.inf, requests: Callable[[float], float | None] | None = None,
) -> tuple[BurnRow, ...]:  # fmt: skip
    return tuple(
        burn_row(
            pair,
            read,
            target=target,
            window_days=window_days,
            min_requests=min_requests,
            held_seconds=held_seconds,
            requests=requests,
        )
        for pair in PAIRS
    )


def slow_rule(read: Reader, *, target: float, window_days: int, min_bad_events: int) -> SlowRule:
    """Bad events over days, with no request minimum: a trickle failing for days gets a
    ticket, and three bad requests do not."""
    window = window_burn(SLOW_WINDOW_SECONDS, read, target)
    factor = SLOW_PAIR.factor(window_days)
    name = label(SLOW_WINDOW_SECONDS)
    if window.bad_ratio is None or window.events is None or window.burn is None:
        return SlowRule(name, None, min_bad_events, factor, "no-data", f"no events in {name}")
    bad = window.bad_ratio.scaled(window.events)
    burn = window.burn
    if bad.lower >= min_bad_events and burn.lower > factor:
        firing: Firing = "firing"
    elif bad.upper >= min_bad_events and burn.upper > factor:
        firing = "maybe"
    else:
        firing = "quiet"
    note = f"{_count(bad)} bad of {window.events:.0f} events in {name}"
    if bad.upper < min_bad_events:
        note += f": fewer than {min_bad_events}, no ticket"
    return SlowRule(name, bad, min_bad_events, factor, firing, note)


def budget_remaining(attainment: Interval, target: float) -> Interval:
    """The share of the window's error budget left, never below 0 (an overspent budget is
    exhausted, not negative) nor above 1."""
    allowed = 1.0 - target
    bad = bad_ratio(attainment)
    return Interval(_unit(1.0 - bad.upper / allowed), _unit(1.0 - bad.lower / allowed))


def exhaustion_seconds(remaining: Interval, day: WindowBurn, window_days: int) -> float | None:
    """Earliest time to exhaustion at the last day's burn (its harsher bound); None when
    the budget is not being spent at that rate or there is no day of data."""
    if day.burn is None or day.burn.upper <= 0:
        return None
    # A burn of 1 spends the whole budget in one SLO window.
    return remaining.lower * window_days * 86_400.0 / day.burn.upper


def _count(bad: Interval) -> str:
    if bad.is_exact:
        return f"{bad.lower:.0f}"
    return f"{bad.lower:.0f}-{bad.upper:.0f}"


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value))
