"""Burn rates per window pair, both low-traffic guards, and the budget."""

from __future__ import annotations

import pytest

from slo.burn_policy import PAIRS
from slo.evaluation.burn import (
    Reader,
    budget_remaining,
    burn_row,
    exhaustion_seconds,
    slow_rule,
)
from slo.evaluation.figures import Interval, WindowBurn

PAGE_1H = PAIRS[0]


def reader(bad: float, events: float, short_bad: float | None = None) -> Reader:
    """Every window has `events` events and a bad ratio of `bad` (`short_bad` for the
    windows shorter than an hour)."""

    def read(seconds: float) -> tuple[Interval | None, float | None]:
        ratio = short_bad if short_bad is not None and seconds < 3600 else bad
        return Interval.exact(1.0 - ratio), events

    return read


def test_a_fast_burn_with_enough_requests_pages() -> None:
    row = burn_row(PAGE_1H, reader(0.2, 5000), target=0.99, window_days=30, min_requests=100)
    assert row.firing == "firing"
    assert row.factor == 14.4
    assert row.long.burn is not None and row.long.burn.is_exact
    assert row.long.burn.lower == pytest.approx(20.0)


def test_a_burn_that_has_stopped_does_not_page() -> None:
    row = burn_row(PAGE_1H, reader(0.2, 5000, short_bad=0.0), target=0.99, window_days=30,
                   min_requests=100)  # fmt: skip
    assert row.firing == "quiet"


def test_three_bad_requests_in_an_hour_do_not_page() -> None:
    row = burn_row(PAGE_1H, reader(1.0, 3), target=0.99, window_days=30, min_requests=100)
    assert row.firing == "too-few"
    assert row.note == "too few requests to page: 3 in 1h"


def test_an_interval_that_straddles_the_threshold_is_maybe() -> None:
    def read(seconds: float) -> tuple[Interval | None, float | None]:
        return Interval(0.80, 0.90), 1000.0  # bad 10%..20%: threshold 14.4% inside

    row = burn_row(PAGE_1H, read, target=0.99, window_days=30, min_requests=100)
    assert row.firing == "maybe"


def test_the_factors_scale_with_the_slo_window() -> None:
    assert [round(p.factor(30), 3) for p in PAIRS] == [14.4, 6.0, 3.0, 1.0]
    assert round(PAIRS[0].factor(7), 3) == 3.36


def test_a_trickle_failing_for_days_raises_the_slow_ticket() -> None:
    # 2 requests an hour for 3 days, 90% failing: far too few to page, plenty to notice.
    rule = slow_rule(reader(0.9, 144), target=0.99, window_days=28, min_bad_events=10)
    assert rule.firing == "firing"
    assert rule.bad_events == Interval.exact(0.9 * 144)


def test_three_bad_requests_do_not_raise_the_slow_ticket() -> None:
    rule = slow_rule(reader(1.0, 3), target=0.99, window_days=28, min_bad_events=10)
    assert rule.firing == "quiet"
    assert "fewer than 10" in rule.note


def test_no_events_is_no_data_for_every_rule() -> None:
    def nothing(seconds: float) -> tuple[Interval | None, float | None]:
        return None, None

    assert burn_row(PAGE_1H, nothing, target=0.99, window_days=28, min_requests=1).firing == (
        "no-data"
    )
    assert slow_rule(nothing, target=0.99, window_days=28, min_bad_events=1).firing == "no-data"


def test_the_budget_is_never_negative_nor_above_whole() -> None:
    assert budget_remaining(Interval.exact(0.5), 0.99) == Interval.exact(0.0)
    assert budget_remaining(Interval.exact(1.0), 0.99) == Interval.exact(1.0)
    remaining = budget_remaining(Interval(0.994, 0.996), 0.99)
    assert round(remaining.lower, 6) == 0.4 and round(remaining.upper, 6) == 0.6


def test_exhaustion_is_the_earliest_time_at_the_days_burn() -> None:
    day = WindowBurn(86400.0, "1d", 1000.0, Interval(0.01, 0.02), Interval(1.0, 2.0))
    # Half the budget left, burning at most 2x: half of a 30-day window, halved.
    assert exhaustion_seconds(Interval(0.5, 0.6), day, 30) == 0.5 * 30 * 86400 / 2
    idle = WindowBurn(86400.0, "1d", 1000.0, Interval.exact(0.0), Interval.exact(0.0))
    assert exhaustion_seconds(Interval.exact(1.0), idle, 30) is None


def test_the_request_guard_counts_requests_not_token_gaps() -> None:
    # 5000 bad token gaps an hour, but they came from 20 requests: too few to page.
    row = burn_row(PAGE_1H, reader(0.2, 5000), target=0.99, window_days=30, min_requests=100,
                   requests=lambda seconds: 20.0)  # fmt: skip
    assert row.firing == "too-few"
    assert row.note == "too few requests to page: 20 in 1h"
