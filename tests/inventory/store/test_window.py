"""Chunks (one matrix per instance and name) hold exactly what the plain per-series read
holds: same series, same samples at the same times, nothing where a series was absent."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from inventory.models import Endpoint, SampleFrame
from inventory.store.window import ReadNeed, StoreWindow, store_read
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = pytest.mark.django_db

E2E = "vllm:e2e_request_latency_seconds"
TYPES = {E2E: "histogram"}
NAMES = frozenset({f"{E2E}_bucket", "vllm:num_requests_waiting", "vllm:request_success_total"})


def _scrape(i: int, *, model: str = "m", later_layout: bool = False) -> list:
    labels = {"model_name": model, "engine": "0"}
    buckets = {"0.1": 2 * i, "0.5": 6 * i, "+Inf": 10 * i}
    samples = [("vllm:num_requests_waiting", labels, float(i % 3))]
    if later_layout:  # a new bucket and a new finish reason appear; column order changes
        buckets = {"0.05": i, **buckets}
        samples.append(("vllm:request_success_total", {**labels, "finished_reason": "abort"}, i))
    samples.append(("vllm:request_success_total", {**labels, "finished_reason": "stop"}, 3.0 * i))
    return [*histogram(E2E, labels, buckets, total=0.5 * i), *samples]


def _rows_by_key(
    window: StoreWindow,
    need: ReadNeed,
    *,
    model_name: str | None = None,
    match: Sequence[tuple[str, str]] = (),
) -> dict:
    rows = {}
    for chunk in window.chunks(need, model_name=model_name, match=match).chunks:
        assert chunk.values.shape == (len(chunk.keys), len(chunk.times))
        assert len(set(chunk.keys)) == len(chunk.keys)
        for i, key in enumerate(chunk.keys):
            sampled = np.ones(len(chunk.times), bool) if chunk.present is None else chunk.present[i]
            rows[(chunk.name, key)] = (chunk.times[sampled], chunk.values[i][sampled], chunk)
    return rows


def _plain_by_key(
    endpoints: dict, start: float, end: float, *, model_name: str | None = None
) -> dict:
    read = store_read(
        endpoints=endpoints, names=NAMES, start=at(start), end=at(end), model_name=model_name
    )
    return {(raw.name, tuple(sorted(raw.labels.items()))): raw for raw in read.series}


def test_chunks_hold_what_the_plain_read_holds_across_layout_changes_and_gaps() -> None:
    fleet = fleet_named()
    endpoints = {}
    for e in range(3):
        scrapes = [(10 * i + e, _scrape(i, later_layout=i > 20)) for i in range(40)]
        if e == 2:
            scrapes = scrapes[:10] + scrapes[15:]  # a replica that did not answer for a while
        endpoint = endpoint_with_scrapes(fleet, f"h{e}:1", scrapes, types=TYPES)
        endpoints[endpoint.id] = f"h{e}:1"
    window = StoreWindow(endpoints=endpoints, names=NAMES, start=at(0), end=at(400))
    for start, end in ((0, 400), (150, 300), (250, 400)):
        need = ReadNeed(endpoints, NAMES, at(start), at(end))
        chunked, plain = _rows_by_key(window, need), _plain_by_key(endpoints, start, end)
        assert set(chunked) == set(plain)
        for key, raw in plain.items():
            times, values, _ = chunked[key]
            assert np.array_equal(times, raw.times)
            assert np.array_equal(values, raw.values, equal_nan=True)
    # The abort series starts with the second layout: before it, it is absent, not zero.
    chunked = _rows_by_key(window, ReadNeed(endpoints, NAMES, at(0), at(400)))
    abort = next(v for k, v in chunked.items() if ("finished_reason", "abort") in k[1])
    assert abort[2].present is not None and not abort[2].present.all()
    assert not np.isnan(abort[1]).any()


def test_two_endpoints_of_one_instance_make_one_chunk_in_scrape_order() -> None:
    fleet = fleet_named()
    first = endpoint_with_scrapes(
        fleet, "h0:1", [(10 * i, _scrape(i)) for i in range(10)], types=TYPES
    )
    # The same host and port on another path: Prometheus would call both `h0:1`.
    second = Endpoint.objects.create(fleet=fleet, url="http://h0:1/other-metrics")
    for frame in SampleFrame.objects.filter(endpoint=first).order_by("at")[:5]:
        SampleFrame.objects.create(
            endpoint=second,
            series_set=frame.series_set,
            at=at((frame.at - at(0)).total_seconds() + 5),
            values_blob=frame.values_blob,
        )
    endpoints = {first.id: "h0:1", second.id: "h0:1"}
    window = StoreWindow(endpoints=endpoints, names=NAMES, start=at(0), end=at(100))
    need = ReadNeed(endpoints, NAMES, at(0), at(100))
    chunks = window.chunks(need).chunks
    assert len({chunk.name for chunk in chunks}) == len(chunks)  # one per name
    chunked, plain = _rows_by_key(window, need), _plain_by_key(endpoints, 0, 100)
    assert set(chunked) == set(plain)
    for key, raw in plain.items():
        assert np.array_equal(chunked[key][0], raw.times)
        assert np.array_equal(chunked[key][1], raw.values, equal_nan=True)
    assert np.all(np.diff(chunks[0].times) > 0)


def test_chunks_keep_only_the_series_of_the_model_asked_for() -> None:
    fleet = fleet_named()
    endpoints = {}
    for e, model in enumerate(("llama", "qwen")):
        scrapes = [(10 * i, _scrape(i, model=model)) for i in range(10)]
        endpoint = endpoint_with_scrapes(fleet, f"h{e}:1", scrapes, types=TYPES)
        endpoints[endpoint.id] = f"h{e}:1"
    window = StoreWindow(endpoints=endpoints, names=NAMES, start=at(0), end=at(100))
    need = ReadNeed(endpoints, NAMES, at(0), at(100))
    chunked = _rows_by_key(window, need, model_name="qwen")
    assert chunked and all(("model_name", "qwen") in key for _, key in chunked)
    assert set(chunked) == set(_plain_by_key(endpoints, 0, 100, model_name="qwen"))
    stop = _rows_by_key(window, need, match=(("finished_reason", "stop"),))
    assert {name for name, _ in stop} == {"vllm:request_success_total"}
    assert not math.isnan(sum(values.sum() for _, values, _ in stop.values()))


def test_instances_scraped_together_make_one_chunk_that_holds_what_the_plain_read_holds() -> None:
    fleet = fleet_named()
    endpoints = {}
    for e in range(4):
        scrapes = [(10 * i, _scrape(i + e)) for i in range(30)]
        endpoint = endpoint_with_scrapes(fleet, f"h{e}:1", scrapes, types=TYPES)
        endpoints[endpoint.id] = f"h{e}:1"
    window = StoreWindow(endpoints=endpoints, names=NAMES, start=at(0), end=at(300))
    for start, end in ((0, 300), (100, 250)):
        need = ReadNeed(endpoints, NAMES, at(start), at(end))
        chunks = window.chunks(need).chunks
        # One chunk a name: four instances, the same scrape instants, the same events.
        assert len(chunks) == len(NAMES)
        assert all(len({dict(k)["instance"] for k in c.keys}) == 4 for c in chunks)
        chunked, plain = _rows_by_key(window, need), _plain_by_key(endpoints, start, end)
        assert set(chunked) == set(plain)
        for key, raw in plain.items():
            assert np.array_equal(chunked[key][0], raw.times)
            assert np.array_equal(chunked[key][1], raw.values, equal_nan=True)
