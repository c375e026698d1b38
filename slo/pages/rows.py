"""The SLO list page: one row per SLO, with its state, each objective's attainment, its
goodput, budget remaining, most urgent burn rule and how much of its window is held."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from slo.evaluation import BurnRow, Goodput, SloStatus, duration_text
from slo.pages.formatting import (
    FIRING_COLOURS,
    FIRING_LABELS,
    NO_DATA,
    Shown,
    StateShown,
    attainment_shown,
    budget_shown,
    goodput_rate_shown,
    state_shown,
)
from slo.pages.selectors import budget_sort_key

# Burn rule states, most urgent first.
FIRING_ORDER = ("firing", "maybe", "too-few", "quiet", "no-data")


@dataclass(frozen=True)
class ObjectiveCell:
    label: str
    attainment: Shown
    state: StateShown


@dataclass(frozen=True)
class BurnAlert:
    """The most urgent burn rule of an SLO, in words."""

    text: str
    firing: str
    colour: str
    note: str


@dataclass(frozen=True)
class SloRow:
    status: SloStatus
    state: StateShown
    objectives: tuple[ObjectiveCell, ...]
    goodput: Shown
    budget: Shown
    alert: BurnAlert | None
    window: Shown


def window_shown(status: SloStatus) -> Shown:
    """`28 d` when the whole window is held, else `28 d; 19 h held locally`; the
    evaluation's full note as the title."""
    window = f"{status.window_days} d"
    if status.held_seconds >= status.window_days * 86_400:
        return Shown(window, status.window_note)
    where = "locally" if status.backend == "local" else "in Prometheus"
    held = duration_text(status.held_seconds)
    return Shown(f"{window}; {held} held {where}", status.window_note, exact=False)


def worst_alert(status: SloStatus) -> BurnAlert | None:
    """The most urgent burn pair of any objective (firing first), or None without rules."""
    candidates: list[tuple[int, str, BurnRow]] = [
        (FIRING_ORDER.index(row.firing), objective.label, row)
        for objective in status.objectives
        for row in objective.burn
    ]
    if not candidates:
        return None
    rank, label, row = min(candidates, key=lambda c: c[0])
    text = f"{label} {row.pair} {row.severity}: {FIRING_LABELS[row.firing]}"
    return BurnAlert(text, row.firing, FIRING_COLOURS[row.firing], row.note)


def goodput_shown(goodput: Goodput | None) -> Shown:
    if goodput is None:
        return Shown(NO_DATA, "no per-request objective to combine", exact=False, missing=True)
    shown = goodput_rate_shown(goodput.requests_per_second, "req/s")
    return Shown(shown.text, goodput.note or shown.title, shown.exact, shown.missing)


def slo_row(status: SloStatus) -> SloRow:
    cells = tuple(
        ObjectiveCell(o.label, attainment_shown(o), state_shown(o.state)) for o in status.objectives
    )
    return SloRow(
        status=status,
        state=state_shown(status.state),
        objectives=cells,
        goodput=goodput_shown(status.goodput),
        budget=budget_shown(status.budget_remaining),
        alert=worst_alert(status),
        window=window_shown(status),
    )


def slo_rows(statuses: Iterable[SloStatus]) -> list[SloRow]:
    return [slo_row(status) for status in sorted(statuses, key=budget_sort_key)]
