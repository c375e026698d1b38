"""Stores written frame by frame for the store cache tests, read with and without the
caches, and counters of what a read did."""

from __future__ import annotations

import math
import secrets
import zlib
from array import array
from collections.abc import Sequence
from typing import Any
from unittest import mock

import numpy as np
from django.test.utils import CaptureQueriesContext

from inventory.models import Endpoint, Fleet, SampleFrame, SeriesSet
from inventory.store.codec import encode_layout, encode_values, layout_digest
from inventory.store.reads import FrameBlock, frame_blocks, frames_in_window, micros
from tests.queries.storefill import at

WAITING = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
NAMES = frozenset({WAITING})


def layout_of(width: int) -> tuple[tuple[str, dict[str, str]], ...]:
    """`width` series: one waiting gauge per engine, then running gauges (never read)."""
    return (
        *((WAITING, {"engine": str(e)}) for e in range(width // 2)),
        *((RUNNING, {"engine": str(e)}) for e in range(width - width // 2)),
    )


def new_endpoint(name: str, width: int = 6) -> tuple[Endpoint, SeriesSet]:
    fleet, _ = Fleet.objects.get_or_create(slug="cache", name="cache")
    endpoint = Endpoint.objects.create(fleet=fleet, url=f"http://{name}:8000/metrics")
    return endpoint, new_series_set(endpoint, layout_of(width), 0)


def new_series_set(endpoint: Endpoint, layout: Sequence[Any], seconds: float) -> SeriesSet:
    return SeriesSet.objects.create(
        endpoint=endpoint,
        digest=layout_digest(layout),
        series_blob=encode_layout(layout),
        series_count=len(layout),
        first_seen_at=at(seconds),
    )


def values_for(seed: int, width: int) -> list[float]:
    """Values whose bits matter: -0.0, NaN and infinities among ordinary floats."""
    odd = [-0.0, math.nan, math.inf, -math.inf, 5e-324]
    return [odd[(seed + i) % 5] if (seed + i) % 4 == 0 else seed + i / 7 for i in range(width)]


def write_frame(
    endpoint: Endpoint, series_set: SeriesSet, seconds: float, values: Sequence[float], **kw: Any
) -> SampleFrame:
    """A frame as the scrape cycle writes it (a fresh random token) unless `token=` says."""
    kw.setdefault("token", secrets.randbits(63))
    return SampleFrame.objects.create(
        endpoint=endpoint,
        series_set=series_set,
        at=at(seconds),
        values_blob=encode_values(array("d", values)),
        **kw,
    )


def fill_store(endpoints: int = 3, frames: int = 20, width: int = 6) -> list[int]:
    ids = []
    for e in range(endpoints):
        endpoint, series_set = new_endpoint(f"r{e}", width)
        for i in range(frames):
            write_frame(endpoint, series_set, 15 * i, values_for(100 * e + i, width))
        ids.append(endpoint.pk)
    return ids


def read_blocks(ids: Sequence[int], first: float, last: float) -> list[FrameBlock]:
    return frame_blocks(endpoint_ids=ids, start=at(first), end=at(last), names=NAMES)


def cells_of(blocks: Sequence[FrameBlock]) -> dict[tuple[Any, ...], tuple[float, bytes]]:
    """Every value a read holds by (endpoint, micros, series), as bits: NaN == NaN here."""
    found = {}
    for block in blocks:
        for row, (micro, seconds) in enumerate(zip(block.at_micros, block.at, strict=True)):
            for column, (name, labels) in enumerate(block.series):
                key = (block.endpoint_id, int(micro), name, tuple(sorted(labels.items())))
                found[key] = (float(seconds), block.values[row, column].tobytes())
    return found


def plain_cells(ids: Sequence[int], first: float, last: float) -> dict[tuple[Any, ...], Any]:
    """The same from `frames_in_window`, the plain ORM read the fast path answers to."""
    expected = {}
    for frame in frames_in_window(endpoint_ids=ids, start=at(first), end=at(last)):
        for (name, labels), value in zip(frame.layout, frame.values, strict=True):
            if name in NAMES:
                key = (frame.endpoint_id, micros(frame.at), name, tuple(sorted(labels.items())))
                expected[key] = (frame.at.timestamp(), np.float64(value).tobytes())
    return expected


def same_blocks(a: Sequence[FrameBlock], b: Sequence[FrameBlock]) -> bool:
    """Same blocks in the same order, every array equal to the bit."""
    return len(a) == len(b) and all(
        (x.endpoint_id, x.series) == (y.endpoint_id, y.series)
        and x.at_micros.tobytes() == y.at_micros.tobytes()
        and x.at.tobytes() == y.at.tobytes()
        and x.values.shape == y.values.shape
        and x.values.tobytes() == y.values.tobytes()
        for x, y in zip(a, b, strict=True)
    )


class Decompressions:
    """Counts zlib.decompress calls made while it is active."""

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> Decompressions:
        real = zlib.decompress

        def counted(*args: Any, **kwargs: Any) -> bytes:
            self.count += 1
            return real(*args, **kwargs)

        self._patch = mock.patch.object(zlib, "decompress", counted)
        self._patch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.stop()


def frame_queries(captured: CaptureQueriesContext) -> list[str]:
    """Queries of the frames table: the span summary, any listing of frames, then any
    fetches of values by pk."""
    return [q["sql"] for q in captured.captured_queries if "inventory_sampleframe" in q["sql"]]
