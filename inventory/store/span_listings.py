"""The per-process cache of span listings behind `store.frame_blocks`: which frames (at, pk,
token, series set) each endpoint holds over a span (`SpanListing`), kept in one
`SpanListingCache` (`SPAN_LISTINGS`), and `span_listings`, which answers a read from it
once a summary query of the store agrees, listing only what changed."""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import NamedTuple

import numpy as np
from django.db.models import BinaryField, Case, Count, F, Q, Sum, Value, When

from inventory.models import SampleFrame
from inventory.store.rows import EPOCH, MICROSECOND, frame_rows, micros

# Listings are kept per process so a reread of a span lists only what changed, not every
# frame again.
#
# A listing is only ever used once a summary query agrees with it: the count and the sum of
# token % CHECK_PRIME of the endpoint's frames in the span, read from the (endpoint, at,
# token) index. Tokens are random per written frame, so an insert, a delete, or a frame
# rolled back and written again (same pk, same time) changes the sum; only a change whose
# residues happen to cancel out goes unseen, about 1 in CHECK_PRIME per change. Values are
# still read by (pk, token) alone (frame_cache.FRAME_CACHE), never by position in a
# listing. Frames written before tokens (token 0) add nothing to the sum, so the summary
# counts them apart: an endpoint whose span holds any is listed in full on every read, their
# values along as before, and its listing is never kept.
#
# A prime below 2**31 keeps every residue below 2**31, so a sum of up to 2**32 of them fits
# an int64 on SQLite; PostgreSQL sums bigints as numeric. SQL's % and np.fmod both truncate
# towards zero, so a negative token (written by hand) has the same residue on both sides.
CHECK_PRIME = 2_147_483_647
# A scrape cycle commits its frames, stamped with each scrape's start, up to a scrape
# timeout after that start: a listing made meanwhile misses frames older than its own end.
# Extending a listing relists this much before its end, so such late frames come with the
# tail instead of costing a full listing (later ones still do; they are never missed).
RELIST_MICROS = 60 * 10**6
# The bound on listed frames kept, over all endpoints (least recently read endpoints go
# first): 5 int64 a frame, about 40 MB. A 66-endpoint fleet's day at 15 s is 380,000.
LISTING_CACHE_ROWS = 1_000_000
# An endpoint's listing keeps the frames no older than the oldest start any of its last
# this many reads asked for: a moving window drops what slid out of it, while a wider view
# of the same endpoint, read now and then in between, still finds its span listed.
LISTING_RECENT_READS = 16


class ListedFrames(NamedTuple):
    """Frames of one endpoint as listed, in time order: one int64 array a column."""

    at: np.ndarray  # micros, ascending
    pk: np.ndarray
    token: np.ndarray
    series_set: np.ndarray


NO_FRAMES = ListedFrames(*(np.empty(0, dtype=np.int64) for _ in ListedFrames._fields))


@dataclass(frozen=True)
class SpanListing:
    """Which frames one endpoint held from `start` to `end` (micros, inclusive) when they
    were listed: ascending at, with each frame's pk, token and series set. Never changed
    once made: readers share it without the lock."""

    start: int
    end: int
    at: np.ndarray  # int64 micros, ascending
    pk: np.ndarray  # int64
    token: np.ndarray  # int64
    series_set: np.ndarray  # int64
    # The running sum of token % CHECK_PRIME, one longer than `at`: any span's checksum is
    # two lookups.
    checks: np.ndarray
    # The compressed values of frames written before tokens, by pk: brought along with the
    # listing as the cache never holds them. A listing with any is never kept.
    inline: Mapping[int, bytes]

    @classmethod
    def made(
        cls, start: int, end: int, frames: ListedFrames, inline: Mapping[int, bytes] | None = None
    ) -> SpanListing:
        checks = np.zeros(len(frames.token) + 1, dtype=np.int64)
        np.cumsum(np.fmod(frames.token, CHECK_PRIME), out=checks[1:])
        for column in (*frames, checks):
            column.flags.writeable = False  # shared by every thread that reads it
        return cls(start, end, *frames, checks, inline or {})

    def __len__(self) -> int:
        return len(self.at)

    def span(self, start: int, end: int) -> slice:
        first = int(np.searchsorted(self.at, start, side="left"))
        return slice(first, max(first, int(np.searchsorted(self.at, end, side="right"))))

    def summary(self, start: int, end: int) -> tuple[int, int]:
        """(count, checksum) of the listed frames in [start, end], as `_span_summary`
        reads them from the store."""
        span = self.span(start, end)
        return span.stop - span.start, int(self.checks[span.stop] - self.checks[span.start])

    def extended(self, tail: ListedFrames, after: int, first: int, end: int) -> SpanListing:
        """This listing up to `after`, then `tail` (the frames from just after `after` to
        `end`), without the frames before `first`."""
        keep = slice(0, int(np.searchsorted(self.at, after, side="right")))
        mine = (self.at, self.pk, self.token, self.series_set)
        joined = [np.concatenate([m[keep], t]) for m, t in zip(mine, tail, strict=True)]
        cut = int(np.searchsorted(joined[0], first, side="left"))
        # Copied past the cut, so the frames cut off free their memory.
        return SpanListing.made(first, end, ListedFrames(*(c[cut:].copy() for c in joined)))


class SpanListingCache:
    """Span listings by endpoint id, least recently read first, bounded in frames over
    all endpoints. Web threads and the scheduler share one: its bookkeeping happens under a
    lock, the queries outside it."""

    def __init__(self) -> None:
        self._entries: OrderedDict[int, SpanListing] = OrderedDict()
        self._starts: dict[int, deque[int]] = {}
        self._rows = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def rows(self) -> int:
        return self._rows

    def take(self, endpoint_ids: Iterable[int], start: int) -> dict[int, tuple[SpanListing, int]]:
        """The listings of these endpoints, each marked as just read from `start`, with the
        oldest start their recent reads asked for (a listing extended now keeps no frames
        before it)."""
        found = {}
        with self._lock:
            for endpoint_id in endpoint_ids:
                listing = self._entries.get(endpoint_id)
                if listing is not None:
                    self._entries.move_to_end(endpoint_id)
                    starts = self._starts[endpoint_id]
                    starts.append(start)
                    found[endpoint_id] = (listing, min(starts))
        return found

    def keep(self, listings: Mapping[int, SpanListing], max_rows: int) -> None:
        """Keep these listings (in place of the endpoints' old ones), then drop the least
        recently read endpoints' until `max_rows` frames are left."""
        with self._lock:
            entries = self._entries
            for endpoint_id, listing in listings.items():
                old = entries.pop(endpoint_id, None)
                if old is not None:
                    self._rows -= len(old)
                if len(listing) <= max_rows:
                    entries[endpoint_id] = listing
                    self._rows += len(listing)
                    starts = self._starts.setdefault(
                        endpoint_id, deque(maxlen=LISTING_RECENT_READS)
                    )
                    if not starts:
                        starts.append(listing.start)
                else:
                    self._starts.pop(endpoint_id, None)
            while self._rows > max_rows:
                endpoint_id, listing = entries.popitem(last=False)
                self._starts.pop(endpoint_id, None)
                self._rows -= len(listing)

    def drop(self, endpoint_ids: Iterable[int]) -> None:
        with self._lock:
            for endpoint_id in endpoint_ids:
                listing = self._entries.pop(endpoint_id, None)
                if listing is not None:
                    self._rows -= len(listing)
                self._starts.pop(endpoint_id, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._starts.clear()
            self._rows = 0


SPAN_LISTINGS = SpanListingCache()


def span_listings(ids: Sequence[int], start: datetime, end: datetime) -> dict[int, SpanListing]:
    """The listing of each endpoint's frames in [start, end]: the cached one where the
    summary agrees with it, else one extended by its newest frames (one query for all such
    endpoints) if that then agrees, else a fresh one (one query for the rest, and for the
    endpoints with no listing cached). Keeps what it listed for the next read.

    Only cached listings need the summary: a cold read, or one of endpoints whose frames
    predate tokens (never kept), is one listing query, as the span query always was."""
    first, last = micros(start), micros(end)
    cached = SPAN_LISTINGS.take(ids, first)
    summaries = _span_summary(list(cached), start, end) if cached else {}
    found: dict[int, SpanListing] = {}
    # Per endpoint: its listing, the time after which it is listed again, the time from
    # which it is kept, and the summary the extended listing must agree with.
    tails: dict[int, tuple[SpanListing, int, int, tuple[int, int]]] = {}
    full: list[int] = []
    for endpoint_id in ids:
        if endpoint_id not in cached:
            full.append(endpoint_id)
            continue
        listing, oldest_start = cached[endpoint_id]
        count, check, old_frames = summaries.get(endpoint_id, (0, 0, 0))
        if old_frames:
            full.append(endpoint_id)
        elif listing.summary(first, last) == (count, check):
            found[endpoint_id] = listing
        elif listing.start <= first <= listing.end < last:
            # The window moved on: list only what is newer than the listing.
            after = max(listing.start, listing.end - RELIST_MICROS)
            kept_from = max(listing.start, oldest_start)
            tails[endpoint_id] = (listing, after, kept_from, (count, check))
        else:
            full.append(endpoint_id)
    fresh: dict[int, SpanListing] = {}
    if tails:
        by_after: dict[int, list[int]] = {}
        for endpoint_id, (_, after, _, _) in tails.items():
            by_after.setdefault(after, []).append(endpoint_id)
        where = Q()
        for after, group in by_after.items():
            where |= Q(endpoint_id__in=group, at__gt=EPOCH + after * MICROSECOND)
        listed, _ = _listed_frames(where & Q(at__lte=end))
        for endpoint_id, (listing, after, kept_from, expected) in tails.items():
            tail = listed.get(endpoint_id, NO_FRAMES)
            extended = listing.extended(tail, after, kept_from, last)
            # Still no agreement: a frame changed before the listing's end, or one came or
            # went since the summary. A frame written before tokens in the tail is one the
            # summary did not see either (or it would not have come here).
            if tail.token.all() and extended.summary(first, last) == expected:
                found[endpoint_id] = fresh[endpoint_id] = extended
            else:
                full.append(endpoint_id)
    old: list[int] = []
    if full:
        listed, inline = _listed_frames(Q(endpoint_id__in=full, at__gte=start, at__lte=end))
        for endpoint_id in full:
            frames = listed.get(endpoint_id, NO_FRAMES)
            if frames.token.all():
                found[endpoint_id] = fresh[endpoint_id] = SpanListing.made(first, last, frames)
            else:
                found[endpoint_id] = SpanListing.made(first, last, frames, inline)
                old.append(endpoint_id)
    SPAN_LISTINGS.keep(fresh, LISTING_CACHE_ROWS)
    SPAN_LISTINGS.drop(old)
    return found


def _span_summary(
    ids: Sequence[int], start: datetime, end: datetime
) -> dict[int, tuple[int, int, int]]:
    """Per endpoint with frames in [start, end]: how many, the sum of their token %
    CHECK_PRIME, and how many were written before tokens. Reads the (endpoint, at, token)
    index alone."""
    rows = (
        SampleFrame.objects.filter(endpoint_id__in=ids, at__gte=start, at__lte=end)
        .order_by()
        .values_list("endpoint_id")
        .annotate(
            frames=Count("*"),
            token_check=Sum(F("token") % CHECK_PRIME),
            old=Count(Case(When(token=0, then=Value(1)))),
        )
    )
    # PostgreSQL sums bigints as numeric (a Decimal here): whole, so int() is exact.
    return {endpoint_id: (n, int(check), old) for endpoint_id, n, check, old in rows}


def _listed_frames(where: Q) -> tuple[dict[int, ListedFrames], dict[int, bytes]]:
    """The frames `where` selects, per endpoint in time order, and the compressed values of
    those written before tokens by pk (the values cache never holds theirs: see
    `frame_cache.with_values`)."""
    frames = (
        SampleFrame.objects.filter(where)
        .order_by("endpoint_id", "at")  # the (endpoint, at) index order
        .annotate(
            inline_blob=Case(When(token=0, then=F("values_blob")), output_field=BinaryField())
        )  # selected last, after the fields
        .values_list("endpoint_id", "at", "pk", "token", "series_set_id", "inline_blob")
    )
    rows = list(frame_rows(frames))
    if not rows:
        return {}, {}
    endpoint_ids, at, pks, tokens, series_sets, blobs = zip(*rows, strict=True)
    inline = {pk: blob for pk, blob in zip(pks, blobs, strict=True) if blob is not None}
    columns = [np.array(c, dtype=np.int64) for c in (endpoint_ids, at, pks, tokens, series_sets)]
    # Rows come by endpoint: each endpoint's run starts where the id changes.
    bounds = [0, *(np.flatnonzero(np.diff(columns[0])) + 1).tolist(), len(rows)]
    # Each endpoint's own copies: a listing kept must not hold the whole query's arrays.
    listed = {
        int(columns[0][i]): ListedFrames(*(c[i:j].copy() for c in columns[1:]))
        for i, j in pairwise(bounds)
    }
    return listed, inline
