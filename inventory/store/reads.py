"""Reads of the embedded sample store (writes happen in services, one cycle at a time): the
plain ORM read of frames (`frames_in_window`), decoded layouts and the label values they
hold, and `frame_blocks`, the fast block read the queries use, through the per-process
caches of `frame_cache` and `span_listings` when FLEETSCOPE_FRAME_CACHE_MB allows."""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import models
from django.db.models.functions import Lag, Lead, RowNumber

from inventory.models import Endpoint, SampleFrame, SeriesSet
from inventory.store.codec import Series, decode_layout, decode_values
from inventory.store.frame_cache import FRAME_CACHE, with_values

# micros is this module's to import too: readers take it from here with frame_blocks.
from inventory.store.rows import BlockKey, BlockRows, FrameKey, ValueRows, frame_rows, micros
from inventory.store.span_listings import SPAN_LISTINGS, SpanListing, span_listings


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


def store_span(endpoint_ids: Sequence[int]) -> tuple[datetime, datetime] | None:
    """The oldest and newest frame the store holds for these endpoints (None when it holds
    none): how much of a long window (an SLO's 28 days) the embedded store can answer."""
    found = SampleFrame.objects.filter(endpoint_id__in=endpoint_ids).aggregate(
        first=models.Min("at"), last=models.Max("at")
    )
    if found["first"] is None:
        return None
    return found["first"], found["last"]


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


def label_values_ever(*, endpoint_ids: Sequence[int], label: str) -> list[str]:
    """The values `label` took in any layout these endpoints have had (a model no longer
    served may still be in an earlier window)."""
    layouts = SeriesSet.objects.filter(endpoint_id__in=endpoint_ids).values_list("id", flat=True)
    return label_values(series_set_ids=list(layouts), label=label)


def series_labels(*, series_set_ids: Sequence[int]) -> dict[int, list[Mapping[str, str]]]:
    """The labels of every series in each of these series sets, by series-set id (which
    GPU each DCGM series is on and the pod using it, say). Shared: read only."""
    sets = SeriesSet.objects.filter(pk__in=series_set_ids)
    layouts = _layouts(list(sets.values_list("endpoint_id", flat=True)))
    return {
        series_set_id: [labels for _, labels in layouts.get(series_set_id, ())]
        for series_set_id in series_set_ids
    }


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


# Here rather than in frame_cache: the one setting switches both caches, and it is where
# `frame_blocks` looks it up (the benchmarks' baseline patches it here to bypass them).
def _frame_cache_limit() -> int:
    """The frame cache's bound in bytes, from the setting as it is now; 0: off (and then
    emptied, the span listings too, so turning it off frees the memory as well)."""
    limit = int(settings.FLEETSCOPE_FRAME_CACHE_MB * 2**20)
    if limit <= 0:
        caches_clear()
    return max(limit, 0)


def caches_clear() -> None:
    """Empty this process's caches of decompressed frames and of span listings."""
    FRAME_CACHE.clear()
    SPAN_LISTINGS.clear()


class _KeptColumns:
    """Per series set: the kept layout entries, their column indexes, the layout's width."""

    def __init__(self, layouts: Mapping[int, list[Series]], names: frozenset[str]) -> None:
        self._layouts = layouts
        self._names = names
        self._kept: dict[int, tuple[tuple[Series, ...], np.ndarray, int]] = {}

    def __getitem__(self, series_set_id: int) -> tuple[tuple[Series, ...], np.ndarray, int]:
        kept = self._kept.get(series_set_id)
        if kept is None:
            # A series set written after the layouts were read (a scrape cycle landed).
            layout = self._layouts.get(series_set_id) or _layout(series_set_id)
            wanted = [i for i, (name, _) in enumerate(layout) if name in self._names]
            kept = self._kept[series_set_id] = (
                tuple(layout[i] for i in wanted),
                np.array(wanted, dtype=np.intp),
                len(layout),
            )
        return kept


def frame_blocks(
    *, endpoint_ids: Sequence[int], start: datetime, end: datetime, names: frozenset[str]
) -> list[FrameBlock]:
    """Frames with start <= at <= end, each layout decoded once and each values vector
    decompressed once (not at all when its layout holds none of `names`).

    With the frame cache on (FLEETSCOPE_FRAME_CACHE_MB), which frames the span holds comes
    from this process's span listings (`store_listings.span_listings`: a summary query
    checks them, and usually only the newest frames need listing), and only values this
    process has not decompressed before are fetched, by pk (`frame_cache.with_values`).
    The live overview rereads the same hour every
    interval, moved by one step: that is about one new frame per endpoint to list and to
    fetch instead of the whole hour. With the cache off, one query reads the span, values
    and all."""
    limit = _frame_cache_limit()
    columns = _KeptColumns(_layouts(endpoint_ids), names)
    if limit:
        ids = sorted(set(endpoint_ids))
        listings = span_listings(ids, start, end)
        rows = with_values(_listed_rows(listings, micros(start), micros(end), columns), limit)
    else:
        rows = _span_rows(endpoint_ids, start, end, columns)
    blocks = []
    for (endpoint_id, series_set_id), (micro_list, chunks) in rows.items():
        series, wanted, width = columns[series_set_id]
        if chunks:
            matrix = np.frombuffer(b"".join(chunks), dtype=np.float64).reshape(-1, width)
            values = matrix[:, wanted]  # a copy: only the wanted columns stay alive
        else:
            values = np.empty((len(micro_list), 0))
        # A copy too: the listing a block's micros come from is shared and cached.
        at_micros = np.array(micro_list, dtype=np.int64)
        blocks.append(FrameBlock(endpoint_id, series, at_micros, _timestamps(at_micros), values))
    return blocks


def _span_rows(
    endpoint_ids: Sequence[int], start: datetime, end: datetime, columns: _KeptColumns
) -> ValueRows:
    """The span in one query, every frame with its values, in (endpoint, at) order: the
    read without the frame cache."""
    frames = (
        SampleFrame.objects.filter(endpoint_id__in=endpoint_ids, at__gte=start, at__lte=end)
        .order_by("endpoint_id", "at")  # the (endpoint, at) index order
        .values_list("endpoint_id", "at", "series_set_id", "values_blob")
    )
    # The bytes are joined and viewed as one (frames x layout) matrix per block: no numpy
    # call per row.
    rows: dict[BlockKey, tuple[list[int], list[bytes]]] = {}
    for endpoint_id, micro, series_set_id, blob in frame_rows(frames):
        micro_list, chunks = rows.setdefault((endpoint_id, series_set_id), ([], []))
        micro_list.append(micro)
        if len(columns[series_set_id][1]):
            chunks.append(zlib.decompress(blob))  # codec.decode_values, left as bytes
    return dict(rows)  # as ValueRows: its micros are only read from here on


def _listed_rows(
    listings: Mapping[int, SpanListing], start: int, end: int, columns: _KeptColumns
) -> BlockRows:
    """The blocks of these listings' frames in [start, end] micros, in the order one
    (endpoint, at) ordered query would first meet them; frames are keys, except those
    written before tokens, whose values the listing brought along."""
    rows: BlockRows = {}
    for endpoint_id in sorted(listings):
        listing = listings[endpoint_id]
        span = listing.span(start, end)
        at = listing.at[span]
        if not len(at):
            continue
        series_sets = listing.series_set[span]
        first = series_sets[0]
        if (series_sets == first).all():  # the usual case: one layout all along
            groups: list[tuple[int, Any]] = [(int(first), slice(None))]
        else:
            held, firsts = np.unique(series_sets, return_index=True)
            groups = [(int(held[i]), series_sets == held[i]) for i in np.argsort(firsts)]
        pks, tokens = listing.pk[span], listing.token[span]
        for series_set_id, taken in groups:
            chunks: list[bytes | FrameKey] = []
            if len(columns[series_set_id][1]):
                keys = zip(pks[taken].tolist(), tokens[taken].tolist(), strict=True)
                if listing.inline:
                    chunks = [
                        zlib.decompress(listing.inline[key[0]]) if key[1] == 0 else key
                        for key in keys
                    ]
                else:
                    chunks = list(keys)
            rows[(endpoint_id, series_set_id)] = (at[taken], chunks)
    return rows


def _timestamps(at_micros: np.ndarray) -> np.ndarray:
    """`datetime.timestamp()` of each instant: that is the exact micros over 10**6, correctly
    rounded, and so is this float64 division (micros < 2**53 convert exactly)."""
    return at_micros.astype(np.float64) / 1e6


@dataclass(frozen=True)
class LayoutRun:
    """A stretch of consecutive frames of one endpoint stored under one layout: when the
    first and the last of them were taken, how many there were, and the layout's series
    (decoded once per process; shared, read only). An endpoint that flips back to a layout
    it had before starts a new run of the same series set."""

    endpoint_id: int
    series_set_id: int
    first_at: datetime
    last_at: datetime
    frames: int
    series: Sequence[Series]


def layout_runs(
    *, endpoint_ids: Sequence[int], start: datetime | None = None, end: datetime | None = None
) -> dict[int, list[LayoutRun]]:
    """Every layout each of these endpoints had over time, as runs in time order, by
    endpoint id (endpoints without frames are left out): what FleetScope saw them expose
    and since when. Frames with start <= at <= end, when given.

    Only the frames where the layout changes come back from the database (window functions
    find them), so the cost is one ordered scan of the frames' index, not a row per frame
    in Python."""
    frames = SampleFrame.objects.filter(endpoint_id__in=endpoint_ids)
    if start is not None:
        frames = frames.filter(at__gte=start)
    if end is not None:
        frames = frames.filter(at__lte=end)
    by_endpoint, in_time = [models.F("endpoint_id")], models.F("at").asc()
    edges = (
        frames.annotate(
            previous=models.Window(
                Lag("series_set_id"), partition_by=by_endpoint, order_by=in_time
            ),
            following=models.Window(
                Lead("series_set_id"), partition_by=by_endpoint, order_by=in_time
            ),
            number=models.Window(RowNumber(), partition_by=by_endpoint, order_by=in_time),
        )
        .filter(
            models.Q(previous__isnull=True)
            | models.Q(following__isnull=True)
            | ~models.Q(previous=models.F("series_set_id"))
            | ~models.Q(following=models.F("series_set_id"))
        )
        .order_by("endpoint_id", "at")
        .values_list("endpoint_id", "series_set_id", "at", "number", "previous", "following")
    )
    rows = list(edges)
    layouts = _layouts(sorted({row[0] for row in rows}))
    runs: dict[int, list[LayoutRun]] = {}
    opened: tuple[datetime, int] | None = None  # the open run's first frame: at, number
    for endpoint_id, series_set_id, at, number, previous, following in rows:
        if previous != series_set_id or opened is None:
            opened = (at, number)
        if following != series_set_id:
            layout = layouts.get(series_set_id) or _layout(series_set_id)
            run = LayoutRun(
                endpoint_id, series_set_id, opened[0], at, number - opened[1] + 1, layout
            )
            runs.setdefault(endpoint_id, []).append(run)
            opened = None
    return runs


def current_layouts(*, endpoint_ids: Sequence[int]) -> dict[int, Sequence[Series]]:
    """The layout of each endpoint's newest frame, by endpoint id (endpoints without
    frames are left out): the series and label values it exposes now. One query, a
    newest-first subquery per endpoint on the (endpoint, at) index. Shared: read only."""
    newest = SampleFrame.objects.filter(endpoint_id=models.OuterRef("pk")).order_by("-at")
    found = {
        endpoint_id: series_set_id
        for endpoint_id, series_set_id in Endpoint.objects.filter(pk__in=endpoint_ids)
        .annotate(latest=models.Subquery(newest.values("series_set_id")[:1]))
        .values_list("pk", "latest")
        if series_set_id is not None
    }
    layouts = _layouts(sorted(found))
    return {
        endpoint_id: layouts.get(series_set_id) or _layout(series_set_id)
        for endpoint_id, series_set_id in found.items()
    }
