"""How the SLO pages word a figure: `Shown` (its text, a tooltip saying how precise it is
and why, whether it is exact) and the small text helpers behind it.

An exact value reads "99.31%", an interval "99.10–99.40%", and a missing one says
"unavailable" or "no data", never 0."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from slo.evaluation import (
    STATE_COLOURS,
    STATE_LABELS,
    Interval,
    ObjectiveStatus,
    State,
)
from slo.models import Slo

DASH = "\u2013"  # en dash between an interval's bounds
NO_DATA = "no data"
UNAVAILABLE = "unavailable"

# Burn rule states: their colour class and words.
FIRING_COLOURS = {
    "firing": "bad",
    "maybe": "warn",
    "quiet": "good",
    "too-few": "none",
    "no-data": "none",
}
FIRING_LABELS = {
    "firing": "firing",
    "maybe": "maybe: the interval straddles the factor",
    "quiet": "quiet",
    "too-few": "too few events",
    "no-data": "no data",
}


@dataclass(frozen=True)
class Shown:
    """A figure as the page shows it: its text, a tooltip saying how precise it is and
    why, and whether it is exact."""

    text: str
    title: str = ""
    exact: bool = True
    missing: bool = False


@dataclass(frozen=True)
class StateShown:
    state: str
    label: str
    colour: str  # CSS class suffix: good, warn, bad, none


MISSING = Shown(NO_DATA, exact=False, missing=True)


def _digits(fraction: float) -> int:
    """Decimals for a percentage: two, more when two would round a miss up to 100%."""
    for digits in (2, 3, 4):
        if fraction >= 1 or round(fraction * 100, digits) < 100:
            return digits
    return 5


def percent(fraction: float, digits: int | None = None) -> str:
    places = _digits(fraction) if digits is None else digits
    return f"{fraction * 100:.{places}f}%"


def interval_percent(interval: Interval) -> str:
    """`99.31%` when exact, `99.10–99.40%` when known only to lie in between."""
    if interval.is_exact:
        return percent(interval.lower)
    digits = max(_digits(interval.lower), _digits(interval.upper))
    return f"{interval.lower * 100:.{digits}f}{DASH}{interval.upper * 100:.{digits}f}%"


def number(value: float) -> str:
    """Three significant figures, no exponent for everyday magnitudes."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def interval_number(interval: Interval, unit: str = "") -> str:
    suffix = f" {unit}" if unit else ""
    if interval.is_exact:
        return f"{number(interval.lower)}{suffix}"
    return f"{number(interval.lower)}{DASH}{number(interval.upper)}{suffix}"


def target_text(target: float) -> str:
    """An objective's target as people write it: `99%`, `99.9%`, `99.95%`."""
    return f"{target * 100:.6g}%"


def seconds_text(seconds: float) -> str:
    """A latency threshold: `300 ms` under a second, `1.5 s` from a second up."""
    if seconds < 1:
        return f"{seconds * 1000:.4g} ms"
    return f"{seconds:.4g} s"


def utc_text(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M UTC")


def selector_text(slo: Slo) -> str:
    """Which replicas the SLO covers, in words."""
    if slo.instances:
        return "replicas " + ", ".join(str(i) for i in slo.instances)
    if slo.model_name:
        return f"every replica serving {slo.model_name}"
    return "every replica of the fleet"


def state_shown(state: State) -> StateShown:
    return StateShown(state, STATE_LABELS[state], STATE_COLOURS[state])


def ratio_shown(ratio: Interval | None) -> Shown:
    """A fraction as a percentage (`99.31%`, `99.10–99.40%`), or "no data"."""
    if ratio is None:
        return MISSING
    return Shown(interval_percent(ratio), exact=ratio.is_exact)


def count_shown(count: Interval | None, unit: str = "") -> Shown:
    """A count (`12 bad requests`, `5–9 bad requests`), or "no data"."""
    if count is None:
        return MISSING
    return Shown(interval_number(count, unit), exact=count.is_exact)


def attainment_shown(objective: ObjectiveStatus) -> Shown:
    if objective.attainment is None:
        why = objective.unavailable or objective.reason or "no events in the window"
        word = UNAVAILABLE if objective.unavailable else NO_DATA
        return Shown(word, why, exact=False, missing=True)
    return Shown(
        interval_percent(objective.attainment), objective.reason, objective.attainment.is_exact
    )


def budget_shown(budget: Interval | None, why: str = "") -> Shown:
    """Error budget remaining, as a share of the window's budget (negative: overspent)."""
    if budget is None:
        return Shown(NO_DATA, why or "no attainment, so no budget", exact=False, missing=True)
    title = "exact" if budget.is_exact else "known only within these bounds"
    if budget.is_exact:
        return Shown(f"{budget.lower * 100:.0f}%", title)
    return Shown(f"{budget.lower * 100:.0f}{DASH}{budget.upper * 100:.0f}%", title, exact=False)


def burn_shown(burn: Interval | None) -> Shown:
    if burn is None:
        return MISSING
    text = interval_number(burn) + "\u00d7"
    title = "" if burn.is_exact else "the burn rate is known only within these bounds"
    return Shown(text, title, exact=burn.is_exact)


def events_shown(events: float | None, name: str = "") -> Shown:
    if events is None:
        return MISSING
    suffix = f" {name}" if name else ""
    return Shown(f"{number(events)}{suffix}")


def goodput_rate_shown(rate: Interval | None, unit: str) -> Shown:
    """`1.25 req/s`, or `bounds 1.2–1.5 req/s` when only bounds are known."""
    if rate is None:
        return MISSING
    if rate.is_exact:
        return Shown(f"{number(rate.lower)} {unit}")
    return Shown(
        f"bounds {number(rate.lower)}{DASH}{number(rate.upper)} {unit}",
        "only bounds are known: some objectives' thresholds fall between bucket edges",
        exact=False,
    )


def objective_title(objective: ObjectiveStatus) -> str:
    """`TTFT ≤ 300 ms for 99% of requests`."""
    target = target_text(objective.target)
    if objective.threshold_seconds is None:
        return f"{objective.label} \u2265 {target} of {objective.events_name}"
    threshold = seconds_text(objective.threshold_seconds)
    return f"{objective.label} \u2264 {threshold} for {target} of {objective.events_name}"
