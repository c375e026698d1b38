"""Histogram checks on chunks: the refusal names the first broken histogram in label order
and its first falling edge, whatever the chunk order, and gaps are never taken for falls."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from inventory.store import SeriesChunk
from queries.local.histogram_checks import BadHistogram, check_counts, check_histograms

NAME = "vllm:e2e_request_latency_seconds"
TIMES = np.array([0.0, 15.0, 30.0])


def _chunk(
    instance: str, buckets: Mapping[str, Sequence[float]], suffix: str = "_bucket"
) -> SeriesChunk:
    labels = []
    for le in buckets:
        row = {"instance": instance, "model_name": "m"}
        if le:
            row["le"] = le
        labels.append(row)
    keys = [tuple(sorted(row.items())) for row in labels]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    values = np.array([list(buckets.values())[i] for i in order], dtype=float)
    return SeriesChunk(
        NAME + suffix, tuple(labels[i] for i in order), tuple(keys[i] for i in order), TIMES,
        values, None, TIMES,
    )  # fmt: skip


GOOD = {"0.1": [1, 2, 3], "0.5": [2, 3, 4], "+Inf": [3, 4, 5]}


def test_the_refusal_names_the_first_broken_histogram_in_label_order() -> None:
    later = _chunk("b:1", {"0.1": [1, 2, 3], "0.5": [0, 3, 4], "+Inf": [3, 4, 5]})
    first = _chunk("a:1", {"0.1": [1, 2, 3], "0.5": [2, 3, 4], "1": [2, 1, 4], "+Inf": [3, 4, 5]})
    for chunks in ([later, first], [first, later]):
        with pytest.raises(BadHistogram, match=r"instance=a:1.*decreasing buckets at le=1$"):
            check_histograms(chunks, NAME)


def test_a_histogram_without_inf_is_refused_before_any_fall_is_looked_for() -> None:
    chunk = _chunk("a:1", {"0.1": [5, 5, 5], "0.5": [1, 1, 1]})
    with pytest.raises(BadHistogram, match=r"instance=a:1.*has no \+Inf bucket"):
        check_histograms([chunk, _chunk("b:1", GOOD)], NAME)


def test_a_frame_missing_a_bucket_is_skipped_not_taken_for_a_fall() -> None:
    chunk = _chunk("a:1", {"0.1": [1, 9, 3], "0.5": [2, math.nan, 4], "+Inf": [3, 4, 5]})
    check_histograms([chunk], NAME)  # 9 > 4 at 15 s, but 0.5 was not scraped then
    broken = _chunk("a:1", {"0.1": [1, 9, 3], "0.5": [2, 3, 4], "+Inf": [3, 4, 5]})
    with pytest.raises(BadHistogram, match="decreasing buckets at le=0.5"):
        check_histograms([broken], NAME)


def test_count_is_compared_with_the_inf_bucket_of_its_own_histogram() -> None:
    buckets = [_chunk("a:1", GOOD), _chunk("b:1", GOOD)]
    check_counts(buckets, [_chunk("a:1", {"": [3, 4, 5]}, "_count")], NAME)
    with pytest.raises(BadHistogram, match=r"instance=b:1.*_count 7 but \+Inf bucket 4"):
        check_counts(buckets, [_chunk("b:1", {"": [3, 7, 5]}, "_count")], NAME)
