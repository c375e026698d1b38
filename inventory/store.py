"""Reads of the embedded sample store (writes happen in services, one cycle at a time)."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from django.db import connections
from django.db.models import QuerySet
from django.db.models.sql.constants import MULTI
from django.utils.dateparse import parse_datetime
from django.utils.timezone import make_aware

from inventory.models import SampleFrame, SeriesSet
from inventory.store_codec import Series, decode_layout, decode_values

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH = EPOCH.replace(tzinfo=None)
MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """Exact microseconds since the epoch (floats would blur the inclusive window edges)."""
    return (moment - EPOCH) // MICROSECOND


@dataclass(frozen=True)
class DecodedFrame:
    endpoint_id: int
    at: datetime
    layout: Sequence[Series]
    values: Sequence[float]

    def value_of(self, name: str, labels: dict[str, str]) -> float | None:
        for (series_name, series_labels), value in zip(self.layout, self.values, strict=True):
            if series_name == name and dict(series_labels) == labels:
                return value
        return None


def frames_in_window(
    *, endpoint_ids: Sequence[int], start: datetime, end: datetime
) -> Iterator[DecodedFrame]:
    """Frames with start <= at <= end, oldest first, each layout decoded once.

    The plain ORM read, one frame at a time: `frame_blocks` is the fast path queries use,
    and the tests hold it to what this returns."""
    frames = (
        SampleFrame.objects.filter(endpoint_id__in=endpoint_ids, at__gte=start, at__lte=end)
        .order_by("at", "endpoint_id")
        .values_list("endpoint_id", "at", "series_set_id", "values_blob")
    )
    layouts: dict[int, list[Series]] = {}
    for endpoint_id, at, series_set_id, blob in frames.iterator(chunk_size=500):
        layout = layouts.get(series_set_id)
        if layout is None:
            layout = layouts[series_set_id] = _layout(series_set_id)
        yield DecodedFrame(endpoint_id, at, layout, decode_values(blob))


def _layout(series_set_id: int) -> list[Series]:
    blob = SeriesSet.objects.values_list("series_blob", flat=True).get(pk=series_set_id)
    return decode_layout(bytes(blob))


# Decoded layouts by digest. A digest names one exact layout, so an entry can never go
# stale (ids could: SQLite hands out a rolled-back id again); the live overview reads the
# same few layouts every interval.
_LAYOUTS_BY_DIGEST: OrderedDict[str, list[Series]] = OrderedDict()
LAYOUT_CACHE_SIZE = 4096
_LAYOUTS_LOCK = threading.Lock()


def label_values(*, series_set_ids: Sequence[int], label: str) -> list[str]:
    """The values `label` takes in these series sets (the models a fleet serves, say)."""
    sets = SeriesSet.objects.filter(pk__in=series_set_ids)
    layouts = _layouts(list(sets.values_list("endpoint_id", flat=True)))
    found = {
        labels[label]
        for series_set_id in series_set_ids
        for _, labels in layouts.get(series_set_id, ())
        if labels.get(label)
    }
    return sorted(found)


def _layouts(endpoint_ids: Sequence[int]) -> dict[int, list[Series]]:
    """Every layout of these endpoints by series-set id: two small queries, decoded once
    per process."""
    digests = dict(
        SeriesSet.objects.filter(endpoint_id__in=endpoint_ids).values_list("id", "digest")
    )
    with _LAYOUTS_LOCK:
        missing = {d for d in digests.values() if d not in _LAYOUTS_BY_DIGEST}
    decoded = {}
    if missing:
        blobs = SeriesSet.objects.filter(
            endpoint_id__in=endpoint_ids, digest__in=missing
        ).values_list("digest", "series_blob")
        decoded = {digest: decode_layout(bytes(blob)) for digest, blob in blobs}
    found = {}
    # Web threads and the scheduler share the cache: its bookkeeping happens under a lock.
    with _LAYOUTS_LOCK:
        _LAYOUTS_BY_DIGEST.update(decoded)
        for series_set_id, digest in digests.items():
            layout = _LAYOUTS_BY_DIGEST.get(digest) or decoded.get(digest)
            if layout is not None:
                _LAYOUTS_BY_DIGEST[digest] = layout
                _LAYOUTS_BY_DIGEST.move_to_end(digest)
                found[series_set_id] = layout
        while len(_LAYOUTS_BY_DIGEST) > LAYOUT_CACHE_SIZE:
            _LAYOUTS_BY_DIGEST.popitem(last=False)
    return found


@dataclass(frozen=True)
class FrameBlock:
    """The frames of one endpoint written with one series set: one row per frame.

    Only the columns of wanted sample names are kept, so holding hours of a fleet
    costs memory for the series a query reads, not for every series scraped.
    """

    endpoint_id: int
    series: tuple[Series, ...]  # the kept layout entries, in column order
    at_micros: np.ndarray  # int64, ascending
    at: np.ndarray  # unix seconds as `datetime.timestamp()` gives them
    values: np.ndarray  # float64, shape (frames, len(series))


def frame_blocks(
    *, endpoint_ids: Sequence[int], start: datetime, end: datetime, names: frozenset[str]
) -> list[FrameBlock]:
    """Frames with start <= at <= end in one query, each layout decoded once and each
    values vector decompressed once (not at all when its layout holds none of `names`)."""
    frames = (
        SampleFrame.objects.filter(endpoint_id__in=endpoint_ids, at__gte=start, at__lte=end)
        .order_by("endpoint_id", "at")  # the (endpoint, at) index order
        .values_list("endpoint_id", "at", "series_set_id", "values_blob")
    )
    layouts = _layouts(endpoint_ids)
    kept: dict[int, tuple[tuple[Series, ...], np.ndarray, int]] = {}
    # (endpoint, series set) -> each frame's micros and decompressed values bytes. The bytes
    # are joined and viewed as one (frames x layout) matrix per block: no numpy call per row.
    rows: dict[tuple[int, int], tuple[list[int], list[bytes]]] = {}
    for endpoint_id, micro, series_set_id, blob in _frame_rows(frames):
        columns = kept.get(series_set_id)
        if columns is None:
            # A series set written after the layouts were read (a scrape cycle landed).
            layout = layouts.get(series_set_id) or _layout(series_set_id)
            wanted = [i for i, (name, _) in enumerate(layout) if name in names]
            columns = kept[series_set_id] = (
                tuple(layout[i] for i in wanted),
                np.array(wanted, dtype=np.intp),
                len(layout),
            )
        micro_list, chunks = rows.setdefault((endpoint_id, series_set_id), ([], []))
        micro_list.append(micro)
        if len(columns[1]):
            chunks.append(zlib.decompress(blob))  # store_codec.decode_values, left as bytes
    blocks = []
    for (endpoint_id, series_set_id), (micro_list, chunks) in rows.items():
        series, columns, width = kept[series_set_id]
        if chunks:
            matrix = np.frombuffer(b"".join(chunks), dtype=np.float64).reshape(-1, width)
            values = matrix[:, columns]  # a copy: only the wanted columns stay alive
        else:
            values = np.empty((len(micro_list), 0))
        at_micros = np.array(micro_list, dtype=np.int64)
        blocks.append(FrameBlock(endpoint_id, series, at_micros, _timestamps(at_micros), values))
    return blocks


def _frame_rows(frames: QuerySet[Any, Any]) -> Iterator[tuple[int, int, int, Any]]:
    """(endpoint id, exact micros, series set id, values blob) of each row of `frames`, a
    values_list of those four columns, as `.iterator(chunk_size=500)` reads it but without
    Django's per-row converters: parsing and making `at` aware for every frame costs about
    as much as decompressing its values. Only `at` needs converting, to micros, here."""
    connection = connections[frames.db]
    tz = connection.timezone
    utc = tz is not None and tz.utcoffset(None) == timedelta(0)
    compiler = frames.query.get_compiler(using=frames.db)
    chunked = not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    for chunk in compiler.execute_sql(MULTI, chunked_fetch=chunked, chunk_size=500):
        for endpoint_id, at, series_set_id, blob in chunk:
            if not isinstance(at, datetime):
                at = parse_datetime(at)  # a driver without a datetime converter: ISO text
            if at.tzinfo is not None:  # drivers that know time zones (PostgreSQL)
                yield endpoint_id, micros(at), series_set_id, blob
            elif utc:  # naive UTC (SQLite): no need to attach a zone to subtract
                yield endpoint_id, (at - NAIVE_EPOCH) // MICROSECOND, series_set_id, blob
            else:  # naive in the connection's own zone, as Django would make it aware
                yield endpoint_id, micros(make_aware(at, tz)), series_set_id, blob


def _timestamps(at_micros: np.ndarray) -> np.ndarray:
    """`datetime.timestamp()` of each instant: that is the exact micros over 10**6, correctly
    rounded, and so is this float64 division (micros < 2**53 convert exactly)."""
    return at_micros.astype(np.float64) / 1e6
