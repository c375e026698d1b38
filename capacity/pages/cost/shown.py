"""Cost figures as text: a figure that is not known is "—" with the reason beside it,
never 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from slo.evaluation import Interval

IDLE = "idle"
NOT_SEEN = (
    "not known: part of these output tokens came from the engines without passing the "
    "gateway, so their requests and prompts were not counted"
)
DASH = "—"


@dataclass(frozen=True)
class Shown:
    """A figure as the page and the command show it: text, and why when it is missing or
    only known as a range."""

    text: str
    title: str = ""
    missing: bool = False
    exact: bool = True
    value: float | None = None  # the number shown (the lower end of a range)


def _number(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def money_text(value: float) -> str:
    """USD with cents, or more digits for amounts under a cent (never "0.00" for a cost)."""
    if value != 0 and abs(value) < 0.01:
        return f"{value:.4f}"
    return _number(value, 2)


def usd_shown(value: float | None, why: str) -> Shown:
    if value is None:
        return Shown(DASH, why, missing=True)
    return Shown(money_text(value), value=value)


def count_shown(value: float | None, why: str = "not known") -> Shown:
    if value is None:
        return Shown(DASH, why, missing=True)
    return Shown(_number(value, 0), value=value)


def hours_shown(value: float | None, why: str = "not measured") -> Shown:
    if value is None:
        return Shown(DASH, why, missing=True)
    return Shown(_number(value, 3), value=value)


def fraction_shown(value: float | None, why: str = "not measured") -> Shown:
    if value is None:
        return Shown(DASH, why, missing=True)
    return Shown(f"{value * 100:.1f}%", value=value)


def interval_shown(
    value: Interval | None, why: str, *, kind: Literal["usd", "count", "fraction"]
) -> Shown:
    if value is None:
        return Shown(DASH, why or "not known", missing=True)

    def one(x: float) -> str:
        if kind == "usd":
            return money_text(x)
        if kind == "fraction":
            return f"{x * 100:.1f}%"
        return _number(x, 0)

    if value.is_exact or one(value.lower) == one(value.upper):
        return Shown(one(value.lower), value=value.lower)
    title = "known only within these bounds: the SLO's good fraction is a range"
    return Shown(f"{one(value.lower)}–{one(value.upper)}", title, exact=False, value=value.lower)
