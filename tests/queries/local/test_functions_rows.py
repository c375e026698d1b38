"""The many-series forms of the local maths give exactly the one-series numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from queries.histogram_math import bucket_quantile, bucket_quantiles
from queries.local.functions import counter_deltas, counter_deltas_rows

INF = math.inf


@pytest.mark.parametrize("is_rate", [True, False])
def test_rates_of_many_counters_in_one_pass_equal_each_counter_alone(is_rate: bool) -> None:
    rng = np.random.default_rng(7)
    times = np.cumsum(rng.uniform(5, 20, size=60))
    counters = np.cumsum(rng.integers(0, 50, size=(12, 60)), axis=1).astype(float)
    counters[3, 30:] -= counters[3, 29] + 1  # a reset: the replica restarted
    counters[4] = 0.0
    counters[5] = 10.0 * np.arange(60)  # born at the first sample: extrapolation stops at 0
    counters[6, :20] = 1e15 + counters[6, :20]  # huge, then a reset
    steps = np.linspace(times[0] - 30, times[-1] + 30, 80)
    rows = counter_deltas_rows(times, counters, steps, 60.0, is_rate=is_rate)
    assert np.isfinite(rows).any(axis=1).all()
    for row, values in zip(rows, counters, strict=True):
        alone = counter_deltas(times, values, steps, 60.0, is_rate=is_rate)
        np.testing.assert_array_equal(row, alone)


def test_rates_of_fractional_counters_with_resets_match_the_step_by_step_sum() -> None:
    # Prefix sums of resets add in another order than Prometheus' running sum: with
    # fractional values (a histogram's _sum in seconds) the last bits may differ, no more.
    rng = np.random.default_rng(3)
    times = np.arange(0.0, 600.0, 15.0)
    counters = np.cumsum(rng.uniform(0, 0.3, size=(5, len(times))), axis=1)
    counters[:, 17:] -= counters[:, 16:17] - rng.uniform(0, 0.01, size=(5, 1))
    counters[2, 30:] -= counters[2, 29] - 0.001
    steps = np.arange(60.0, 600.0, 15.0)
    rows = counter_deltas_rows(times, counters, steps, 120.0)
    for row, values in zip(rows, counters, strict=True):
        np.testing.assert_allclose(row, counter_deltas(times, values, steps, 120.0), rtol=1e-12)


def test_quantiles_of_many_steps_in_one_pass_equal_each_step_alone() -> None:
    rng = np.random.default_rng(11)
    edges = [0.1, 0.5, 1.0, 1.0, 2.5, INF]  # "1" and "1.0" both present
    counts = np.cumsum(rng.uniform(0, 10, size=(200, len(edges))), axis=1)
    counts[5] = 0.0  # no observations
    counts[6, 2] = np.nan  # one bucket missing at this step
    counts[7] = np.nan  # nothing at this step
    counts[8, :3] = 0.0  # everything in the upper buckets
    counts[9] = [4.0, 3.0, 5.0, 5.0, 6.0, 6.0]  # non-monotonic rates, repaired
    for q in (0.01, 0.5, 0.9, 0.99, 1.0):
        together = bucket_quantiles(q, edges, counts)
        alone = [bucket_quantile(q, edges, row) for row in counts]
        np.testing.assert_array_equal(together, alone, err_msg=f"q={q}")


def test_quantiles_of_a_histogram_with_a_non_positive_first_edge_or_no_inf_match_too() -> None:
    counts = np.array([[1.0, 3.0, 4.0], [0.0, 0.0, 2.0], [2.0, 2.0, 2.0]])
    for edges in ([-1.0, 0.0, INF], [0.0, 1.0, INF], [0.5, 1.0, 2.0]):
        together = bucket_quantiles(0.25, edges, counts)
        alone = [bucket_quantile(0.25, edges, row) for row in counts]
        np.testing.assert_array_equal(together, alone, err_msg=str(edges))
