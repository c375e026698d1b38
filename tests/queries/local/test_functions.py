"""Prometheus' rate, lookback and quantile rules as the local backend computes them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from queries.histogram_math import bucket_quantile
from queries.local.functions import counter_deltas, instant_values

INF = math.inf


def arrays(*values: list[float]) -> tuple[np.ndarray, ...]:
    return tuple(np.array(v, dtype=float) for v in values)


def test_a_counter_reset_from_1000_to_5_counts_5_never_minus_995() -> None:
    times, values, steps = arrays([10, 20], [1000, 5], [20])
    assert counter_deltas(times, values, steps, 10, is_rate=False)[0] == 5


def test_increase_across_a_reset_adds_what_came_before_and_after_it() -> None:
    times, values, steps = arrays([0, 10, 20, 30], [990, 1000, 5, 15], [30])
    assert counter_deltas(times, values, steps, 30, is_rate=False)[0] == 25


def test_rate_of_a_steady_counter_extrapolates_to_the_window_edges() -> None:
    times, values, steps = arrays([5, 15, 25, 35, 45, 55], [105, 115, 125, 135, 145, 155], [60])
    assert counter_deltas(times, values, steps, 60)[0] == pytest.approx(1.0)


def test_extrapolation_never_reaches_back_past_the_counter_being_zero() -> None:
    times, values, steps = arrays([5, 15, 25, 35, 45, 55], [0, 10, 20, 30, 40, 50], [60])
    assert counter_deltas(times, values, steps, 60, is_rate=False)[0] == pytest.approx(55)


def test_a_window_edge_far_from_the_samples_extrapolates_only_half_an_interval() -> None:
    times, values, steps = arrays([30, 40, 50], [30, 40, 50], [60])
    # 20 s sampled, +5 s (half the spacing) at the start, +10 s to the end: 35 s worth.
    assert counter_deltas(times, values, steps, 60, is_rate=False)[0] == pytest.approx(35)


def test_fewer_than_two_samples_in_the_window_give_no_rate_rather_than_zero() -> None:
    times, values, steps = arrays([0, 100], [1, 50], [50, 100])
    assert np.isnan(counter_deltas(times, values, steps, 30)).all()


def test_a_gauge_reads_its_last_sample_until_the_five_minute_lookback_runs_out() -> None:
    times, values, steps = arrays([0], [7], [0, 299, 301])
    events = np.array([0.0])
    assert list(instant_values(times, values, events, steps)[:2]) == [7, 7]
    assert np.isnan(instant_values(times, values, events, steps)[2])


def test_a_later_scrape_without_the_series_makes_it_stale_at_once() -> None:
    times, values, steps = arrays([0, 10], [7, 8], [10, 15, 25])
    events = np.array([0.0, 10.0, 20.0])  # scraped at 20 s, series missing (or scrape failed)
    found = instant_values(times, values, events, steps)
    assert found[0] == 8 and found[1] == 8 and np.isnan(found[2])


def test_quantiles_of_a_uniform_distribution_interpolate_to_the_exact_value() -> None:
    edges = [0.25, 0.5, 0.75, 1.0, INF]
    counts = [25, 50, 75, 100, 100]
    assert bucket_quantile(0.5, edges, counts) == pytest.approx(0.5)
    assert bucket_quantile(0.9, edges, counts) == pytest.approx(0.9)
    assert bucket_quantile(0.1, edges, counts) == pytest.approx(0.1)


def test_a_rank_in_the_inf_bucket_answers_the_highest_finite_edge() -> None:
    assert bucket_quantile(0.99, [0.5, 1.0, INF], [10, 20, 100]) == 1.0


def test_a_histogram_without_inf_or_without_observations_has_no_quantile() -> None:
    assert math.isnan(bucket_quantile(0.5, [0.5, 1.0], [10, 20]))
    assert math.isnan(bucket_quantile(0.5, [0.5, 1.0, INF], [0, 0, 0]))


def test_one_edge_spelled_two_ways_is_one_bucket() -> None:
    # "1" and "1.0" from two replicas parse to the same float and are added together.
    assert bucket_quantile(0.5, [1.0, 1.0, INF, INF], [5, 5, 10, 10]) == pytest.approx(1.0)


def test_slightly_non_monotonic_bucket_rates_are_repaired_with_the_running_maximum() -> None:
    # Unrepaired, the 9 would make the third bucket hold 11 observations, not 10.
    assert bucket_quantile(0.75, [1.0, 2.0, 3.0, INF], [10, 9, 20, 20]) == pytest.approx(2.5)
