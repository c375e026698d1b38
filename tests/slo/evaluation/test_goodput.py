"""Goodput: exact with one objective, Fréchet bounds with several, errors as misses."""

from __future__ import annotations

import pytest

from slo.evaluation.figures import Interval
from slo.evaluation.goodput import goodput, joint_bounds, mu_good


def test_one_objective_gives_its_own_fraction() -> None:
    assert joint_bounds([Interval.exact(0.9)]) == Interval.exact(0.9)


@pytest.mark.parametrize(
    ("fractions", "bounds"),
    [
        ([0.9, 0.8], (0.7, 0.8)),
        ([0.99, 0.98, 0.97], (0.94, 0.97)),
        ([0.4, 0.3], (0.0, 0.3)),
    ],
)
def test_several_objectives_give_the_frechet_bounds(
    fractions: list[float], bounds: tuple[float, float]
) -> None:
    joint = joint_bounds([Interval.exact(f) for f in fractions])
    assert joint.lower == pytest.approx(bounds[0]) and joint.upper == pytest.approx(bounds[1])


def test_goodput_is_a_rate_of_finished_requests_and_says_it_is_bounds() -> None:
    found = goodput(
        {"ttft": (Interval.exact(0.9), 1000.0), "e2e": (Interval.exact(0.8), 1000.0)},
        left_out=[], finished=1000.0, errors=None, output_tokens=200_000.0, seconds=100.0,
    )  # fmt: skip
    assert not found.exact
    assert found.requests_per_second is not None
    assert found.requests_per_second.lower == pytest.approx(7.0)
    assert found.requests_per_second.upper == pytest.approx(8.0)
    assert found.note.startswith("bounds")


def test_requests_that_never_got_a_first_token_and_errors_count_as_misses() -> None:
    # 900 of 1000 finished requests got a first token, all within the threshold; 50 errored.
    found = goodput({"ttft": (Interval.exact(1.0), 900.0)}, left_out=[], finished=1000.0,
                    errors=50.0, output_tokens=None, seconds=10.0)  # fmt: skip
    assert found.fraction is not None
    assert found.fraction.upper == pytest.approx(0.9)
    assert found.fraction.lower == pytest.approx(0.85)


def test_no_finished_requests_is_no_data() -> None:
    found = goodput({}, left_out=["itl: counts token gaps, not requests"], finished=None,
                    errors=None, output_tokens=None, seconds=3600.0)  # fmt: skip
    assert found.fraction is None and found.requests_per_second is None


def test_mu_good_is_the_median_good_rate_of_busy_hours_within_slo() -> None:
    hours = [(3600.0 * k, finished, good, held) for k, finished, good, held in (
        (1, 3600.0, 3564.0, True), (2, 7200.0, 7128.0, True), (3, 7200.0, 6000.0, False),
        (4, 1000.0, 1000.0, True), (5, 7000.0, 6930.0, True),
    )]  # fmt: skip
    rate = mu_good("a:1", hours)
    # Busy (>= half of the busiest 7200) and held: hours 1, 2 and 5; hour 3 missed its
    # objectives and hour 4 was idle.
    assert rate.mu_good == pytest.approx(6930.0 / 3600)
    assert len(rate.intervals) == 3
