"""The local backend's faster paths against the plain ones they replace, on realistic data:
group sums against pandas' groupby, frame blocks against frames decoded one by one, and
deltas of whole chunks against one series of the plain read at a time."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from inventory.store import frame_blocks, frames_in_window, micros, store_read
from queries.local.backend import aggregate_parts
from queries.local.functions import counter_deltas, group_reduce, group_sums
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram


def _pandas_sums(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """What `aggregate_parts` did for every sum before it had a numpy path."""
    frame = pd.DataFrame(np.column_stack(list(values)))
    return frame.T.groupby(groups).sum(min_count=1).to_numpy(dtype=float)


def _first_seen_ids(groups: np.ndarray) -> np.ndarray:
    """Group ids numbered in order of first appearance, as `aggregate_parts` numbers them."""
    ids: dict[int, int] = {}
    return np.array([ids.setdefault(int(g), len(ids)) for g in groups])


def _rates(rng: np.random.Generator, series: int, steps: int) -> np.ndarray:
    """Bucket rates as histogram panels see them: mostly small, some zero or -0.0 after
    extrapolation, NaN where a series has too few samples, the odd huge counter."""
    values = rng.exponential(3.0, (series, steps)) * 10.0 ** rng.integers(-3, 4, (series, 1))
    values[rng.random((series, steps)) < 0.2] = 0.0
    values[rng.random((series, steps)) < 0.05] = -0.0
    values[:, : rng.integers(0, 3)] = np.nan
    values[rng.random((series, steps)) < 0.1] = np.nan
    values[rng.random(series) < 0.05] *= 1e12
    return values


@pytest.mark.parametrize("seed", range(40))
def test_group_sums_are_pandas_sums_to_the_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    replicas, edges, steps = int(rng.integers(1, 9)), int(rng.integers(1, 12)), 25
    values = _rates(rng, replicas * edges, steps)
    if seed % 4 == 0:
        values = np.nan_to_num(values, nan=-0.0)  # no NaN: pandas' own reduceat path
    if seed % 10 == 1:
        values[rng.random(values.shape) < 0.02] = np.inf
    # Replica-major rows, as a read returns them: by le, by (instance, le), by instance, all.
    instance = np.repeat(np.arange(replicas), edges)
    le = np.tile(np.arange(edges), replicas)
    for groups in (le, instance * edges + le, instance, np.zeros_like(le)):
        groups = _first_seen_ids(groups)
        found = group_sums(values, groups, int(groups.max()) + 1)
        expected = _pandas_sums(values, groups)
        assert found.shape == expected.shape
        assert np.array_equal(found, expected, equal_nan=True)
        assert np.array_equal(np.signbit(found), np.signbit(expected))


@pytest.mark.parametrize("seed", range(20))
def test_group_averages_maxima_and_minima_are_pandas_ones_to_the_bit(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    series, steps = int(rng.integers(1, 40)), 25
    values = _rates(rng, series, steps)
    if seed % 5 == 1:
        values[rng.random(values.shape) < 0.02] = np.inf
    groups = _first_seen_ids(rng.integers(0, max(1, series // 3), series))
    grouped = pd.DataFrame(values).groupby(groups)
    for agg, expected in (("avg", grouped.mean()), ("max", grouped.max()), ("min", grouped.min())):
        found = group_reduce(values, groups, int(groups.max()) + 1, agg)
        assert np.array_equal(found, expected.to_numpy(dtype=float), equal_nan=True), agg


def aggregate(items: list[tuple[dict[str, str], np.ndarray]]) -> dict:
    """`sum by (le)` of some series, each (labels, values on the step grid)."""
    part = ([labels for labels, _ in items], np.vstack([v for _, v in items]), None)
    return aggregate_parts([part], ("le",))


def test_aggregate_sums_as_pandas_does_including_the_sign_of_zero() -> None:
    zero = [({"le": "1", "instance": "a"}, np.array([-0.0, np.nan, 1.0]))]
    assert math.copysign(1.0, aggregate(zero * 2)[(("le", "1"),)][0]) == 1.0
    no_nan = [({"le": "1", "instance": "a"}, np.array([-0.0, 2.0]))]
    assert math.copysign(1.0, aggregate(no_nan * 2)[(("le", "1"),)][0]) == -1.0
    single = aggregate(no_nan)[(("le", "1"),)]
    assert math.copysign(1.0, single[0]) == -1.0 and single[1] == 2.0


def _scrape(i: int, layout: int) -> list:
    labels = {"model_name": "m", "engine": "0"}
    buckets = {"0.1": 2 * i, "0.5": 6 * i, "+Inf": 10 * i}
    if layout:  # a second series set halfway: one more bucket, another column order
        buckets = {"0.05": i, **buckets}
    return [
        ("vllm:num_requests_waiting", labels, float(i % 3)),
        *histogram("vllm:e2e_request_latency_seconds", labels, buckets, total=0.5 * i),
        ("vllm:gpu_cache_usage_perc", labels, 0.01 * i),
    ]


@pytest.mark.django_db
def test_frame_blocks_hold_what_frames_decoded_one_by_one_hold() -> None:
    fleet = fleet_named()
    types = {"vllm:e2e_request_latency_seconds": "histogram"}
    endpoints = [
        endpoint_with_scrapes(
            fleet, f"h{e}:1", [(7 * i + e, _scrape(i, int(i > 20))) for i in range(40)],
            types=types,
        )
        for e in range(3)
    ]  # fmt: skip
    ids = [endpoint.id for endpoint in endpoints]
    names = frozenset({"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_waiting"})
    start, end = at(30), at(250)
    blocks = frame_blocks(endpoint_ids=ids, start=start, end=end, names=names)
    plain = list(frames_in_window(endpoint_ids=ids, start=start, end=end))
    assert sum(len(block.at) for block in blocks) == len(plain)
    found = {}
    for block in blocks:
        for row, (micro, seconds) in enumerate(zip(block.at_micros, block.at, strict=True)):
            for column, (name, labels) in enumerate(block.series):
                key = (block.endpoint_id, int(micro), name, tuple(sorted(labels.items())))
                found[key] = (float(seconds), float(block.values[row, column]))
    expected = {}
    for frame in plain:
        micro = micros(frame.at)
        for (name, labels), value in zip(frame.layout, frame.values, strict=True):
            if name in names:
                key = (frame.endpoint_id, micro, name, tuple(sorted(labels.items())))
                expected[key] = (frame.at.timestamp(), value)
    assert found == expected


@pytest.mark.django_db
def test_batched_deltas_match_one_series_at_a_time() -> None:
    from queries import Quantile, Scope, Window
    from queries.local.backend import Evaluator
    from queries.plan import Plan, plan_query

    fleet = fleet_named()
    types = {"vllm:e2e_request_latency_seconds": "histogram"}
    for e in range(3):
        scrapes = [(10 * i + e, _scrape(i, int(i > 20))) for i in range(60)]
        if e == 1:  # a broken sample: that series goes alone, with a warning
            scrapes[30][1][2] = (scrapes[30][1][2][0], scrapes[30][1][2][1], math.nan)
        endpoint_with_scrapes(fleet, f"h{e}:1", scrapes, types=types)
    spec = Quantile("e2e", 0.9, window_seconds=60)
    plan = plan_query(spec, scope=Scope(fleet), window=Window(at(120), at(590), 15))
    assert isinstance(plan, Plan)
    read = store_read(
        endpoints=dict(zip(plan.keys["e2e"].endpoint_ids, plan.keys["e2e"].instances, strict=True)),
        names=frozenset({"vllm:e2e_request_latency_seconds_bucket"}), start=at(0), end=at(600),
    )  # fmt: skip
    evaluator = Evaluator(plan, None)
    chunks = evaluator.read(plan.keys["e2e"], "_bucket", spec, 60)
    batched = [
        (labels, row)
        for labels_of_chunk, values, _ in evaluator.deltas(chunks, spec)
        for labels, row in zip(labels_of_chunk, values, strict=True)
    ]
    assert any("non-finite" in warning for warning in evaluator.warnings)
    assert len(batched) == len(read.series)
    found = {tuple(sorted(labels.items())): values for labels, values in batched}
    for raw in read.series:
        finite = np.isfinite(raw.values)
        alone = counter_deltas(
            raw.times[finite], raw.values[finite], evaluator.steps, spec.window_seconds
        )
        assert np.array_equal(found[tuple(sorted(raw.labels.items()))], alone, equal_nan=True)
