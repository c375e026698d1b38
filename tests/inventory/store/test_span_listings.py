"""The span listings behind `frame_blocks`: used only where a summary of the store agrees
with them, so a window moved by one step lists only its new frames while a frame
deleted, inserted or rolled back anywhere in the span is noticed; they keep to their
bound."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any
from unittest import mock

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from inventory.models import Endpoint, SampleFrame, SeriesSet
from inventory.store import reads as store
from inventory.store import span_listings as store_listings
from inventory.store.reads import FrameBlock, micros
from inventory.store.span_listings import (
    CHECK_PRIME,
    LISTING_RECENT_READS,
    RELIST_MICROS,
    SPAN_LISTINGS,
)
from tests.inventory.store.storecache import (
    cells_of,
    fill_store,
    frame_queries,
    layout_of,
    new_endpoint,
    new_series_set,
    plain_cells,
    read_blocks,
    same_blocks,
    values_for,
    write_frame,
)
from tests.queries.storefill import at

pytestmark = pytest.mark.django_db


class Listings:
    """Counts the frames each listing query of `frame_blocks` returned while active."""

    def __init__(self) -> None:
        self.frames: list[int] = []

    def __enter__(self) -> Listings:
        real = store_listings._listed_frames

        def counted(where: Any) -> Any:
            listed, inline = real(where)
            self.frames.append(sum(len(frames.at) for frames in listed.values()))
            return listed, inline

        self._patch = mock.patch.object(store_listings, "_listed_frames", counted)
        self._patch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._patch.stop()


def _uncached(ids: Sequence[int], first: float, last: float) -> list[FrameBlock]:
    """The same read as with the caches off (one query, values and all), but leaving them
    as they are for the next cached read."""
    with mock.patch.object(store, "_frame_cache_limit", lambda: 0):
        return read_blocks(ids, first, last)


def _next_frames(ids: Sequence[int], seconds: float) -> None:
    """One new frame for each endpoint, as a scrape cycle would write."""
    for endpoint_id in ids:
        series_set = SeriesSet.objects.get(endpoint_id=endpoint_id)
        write_frame(
            series_set.endpoint, series_set, seconds, values_for(endpoint_id + int(seconds), 6)
        )


def test_a_window_moved_by_one_step_lists_only_the_newest_frames(cache_mb: Any) -> None:
    ids = fill_store()  # 20 frames an endpoint, 0 s .. 285 s
    read_blocks(ids, 0, 285)
    _next_frames(ids, 300)
    with CaptureQueriesContext(connection) as moved, Listings() as listed:
        blocks = read_blocks(ids, 15, 300)
    # One listing query for all endpoints: the new frame and the last minute before the
    # listing's end again (frames a late commit may have added), not the whole span.
    relisted = sum(1 for i in range(20) if 15 * i * 10**6 > 285 * 10**6 - RELIST_MICROS)
    assert listed.frames == [len(ids) * (relisted + 1)]
    assert relisted + 1 < 20
    assert len(frame_queries(moved)) == 3  # the summary, that listing, the new values
    assert cells_of(blocks) == plain_cells(ids, 15, 300)


def test_rereading_a_listed_span_lists_nothing(cache_mb: Any) -> None:
    ids = fill_store()
    read_blocks(ids, 0, 285)
    with Listings() as listed:
        read_blocks(ids, 0, 285)
        inner = read_blocks(ids, 30, 240)  # any span inside the listed one
    assert listed.frames == []
    assert cells_of(inner) == plain_cells(ids, 30, 240)


def test_a_frame_deleted_in_the_middle_of_a_listed_span_is_left_out(cache_mb: Any) -> None:
    ids = fill_store()
    read_blocks(ids, 0, 285)
    SampleFrame.objects.filter(endpoint_id=ids[1], at=at(120)).delete()
    same = read_blocks(ids, 0, 285)
    assert [len(block.at) for block in same] == [20, 19, 20]
    assert cells_of(same) == plain_cells(ids, 0, 285)
    SampleFrame.objects.filter(endpoint_id=ids[2], at=at(135)).delete()
    _next_frames(ids, 300)
    moved = read_blocks(ids, 15, 300)  # the new frames alone do not account for it
    assert [len(block.at) for block in moved] == [20, 19, 19]
    assert same_blocks(moved, _uncached(ids, 15, 300))


def test_a_frame_inserted_out_of_order_in_the_middle_of_a_listed_span_is_read(
    cache_mb: Any,
) -> None:
    endpoint, series_set = new_endpoint("r0")
    for i in range(20):
        if i not in (7, 9):  # two scrapes whose cycles commit late
            write_frame(endpoint, series_set, 15 * i, values_for(i, 6))
    ids = [endpoint.pk]
    assert len(read_blocks(ids, 0, 285)[0].at) == 18
    write_frame(endpoint, series_set, 15 * 7, values_for(7, 6))
    same = read_blocks(ids, 0, 285)
    assert len(same[0].at) == 19
    assert cells_of(same) == plain_cells(ids, 0, 285)
    write_frame(endpoint, series_set, 15 * 9, values_for(9, 6))
    _next_frames(ids, 300)
    moved = read_blocks(ids, 15, 300)
    assert len(moved[0].at) == 20
    assert same_blocks(moved, _uncached(ids, 15, 300))


def test_a_frame_listed_then_rolled_back_and_written_again_with_another_layout_is_read_anew(
    cache_mb: Any,
) -> None:
    endpoint, series_set = new_endpoint("r0")
    for i in range(4):
        write_frame(endpoint, series_set, 15 * i, values_for(i, 6))
    other_set = new_series_set(endpoint, layout_of(8), 60)
    with pytest.raises(DatabaseError), transaction.atomic():
        rolled_back = write_frame(endpoint, series_set, 60, [1.0] * 6)
        read_blocks([endpoint.pk], 0, 60)  # lists a frame that will never have been
        raise DatabaseError("the cycle fails and its transaction is rolled back")
    # The same pk and time, written under another layout: only the token tells them apart.
    again = write_frame(endpoint, other_set, 60, [2.0] * 8, pk=rolled_back.pk)
    assert (again.pk, again.at) == (rolled_back.pk, rolled_back.at)
    blocks = read_blocks([endpoint.pk], 0, 60)
    assert [len(block.at) for block in blocks] == [4, 1]
    assert blocks[1].values.tolist() == [[2.0] * 4]
    assert same_blocks(blocks, _uncached([endpoint.pk], 0, 60))


def test_a_frame_listed_then_rolled_back_is_left_out(cache_mb: Any) -> None:
    ids = fill_store(endpoints=1, frames=4)
    endpoint, series_set = Endpoint.objects.get(), SeriesSet.objects.get()
    with pytest.raises(DatabaseError), transaction.atomic():
        write_frame(endpoint, series_set, 60, [1.0] * 6)
        assert len(read_blocks(ids, 0, 60)[0].at) == 5
        raise DatabaseError("rolled back")
    blocks = read_blocks(ids, 0, 60)
    assert len(blocks[0].at) == 4
    assert cells_of(blocks) == plain_cells(ids, 0, 60)


def test_frames_written_before_tokens_among_listed_ones_are_read_and_their_endpoint_not_listed(
    cache_mb: Any,
) -> None:
    ids = fill_store(endpoints=2, frames=10)
    read_blocks(ids, 0, 150)
    assert len(SPAN_LISTINGS) == 2
    series_set = SeriesSet.objects.select_related("endpoint").get(endpoint_id=ids[0])
    SampleFrame.objects.filter(endpoint_id=ids[0], at=at(60)).delete()
    write_frame(series_set.endpoint, series_set, 60, values_for(99, 6), token=0)  # written by hand
    write_frame(series_set.endpoint, series_set, 150, values_for(98, 6), token=0)
    _next_frames(ids[1:], 150)
    for _ in range(2):
        with Listings() as listed:
            blocks = read_blocks(ids, 15, 150)
        assert same_blocks(blocks, _uncached(ids, 15, 150))
        assert cells_of(blocks) == plain_cells(ids, 15, 150)
        assert len(SPAN_LISTINGS) == 1  # the other endpoint's listing alone is kept
    assert listed.frames == [10]  # the endpoint with token-0 frames, listed every read


def test_a_frame_replaced_by_one_written_before_tokens_is_read_though_the_sums_agree(
    cache_mb: Any,
) -> None:
    endpoint, series_set = new_endpoint("r0")
    for i in range(4):
        # A token whose residue is 0, as a token-0 frame's is: the checksum cannot tell
        # them apart, the count of token-0 frames in the summary can.
        write_frame(endpoint, series_set, 15 * i, values_for(i, 6), token=CHECK_PRIME * (i + 1))
    ids = [endpoint.pk]
    read_blocks(ids, 0, 45)
    SampleFrame.objects.filter(endpoint=endpoint, at=at(30)).delete()
    write_frame(endpoint, series_set, 30, [7.0] * 6, token=0)
    blocks = read_blocks(ids, 0, 45)
    assert blocks[0].values[2].tolist() == [7.0] * 3
    assert cells_of(blocks) == plain_cells(ids, 0, 45)


def _held_seconds(endpoint_id: int) -> list[int]:
    """The times of an endpoint's frames, in seconds after `at(0)`."""
    moments = SampleFrame.objects.filter(endpoint_id=endpoint_id).values_list("at", flat=True)
    return sorted((micros(moment) - micros(at(0))) // 10**6 for moment in moments)


def test_reads_through_the_listings_always_hold_what_the_uncached_read_holds(cache_mb: Any) -> None:
    rng = random.Random(20261129)
    ids = fill_store(endpoints=3, frames=20)
    sets = {s.endpoint_id: s for s in SeriesSet.objects.select_related("endpoint")}
    newest = 285
    for step in range(80):
        # Each a coin toss, so a frame deleted or inserted in the middle often comes with
        # new frames at the end, as it would between two live reads.
        changes = [change for change in ("scrape", "delete", "insert") if rng.random() < 0.5]
        for change in changes:
            endpoint_id = rng.choice(ids)
            held = _held_seconds(endpoint_id)
            if change == "scrape":
                newest += 15
                _next_frames(ids, newest)
            elif change == "delete" and held:
                gone = at(rng.choice(held))
                SampleFrame.objects.filter(endpoint_id=endpoint_id, at=gone).delete()
            elif gaps := sorted(set(range(0, newest, 15)) - set(held)):
                series_set = sets[endpoint_id]
                write_frame(series_set.endpoint, series_set, rng.choice(gaps), [step] * 6)
        # Mostly the live window moving on; now and then a wider or an older view.
        view = rng.choice(["live", "live", "live", "wide", "old"])
        span = {"live": 285, "wide": 600, "old": 150}[view]
        last = newest if view != "old" else max(0, newest - rng.randrange(0, 300, 15))
        first = max(0, last - span)
        blocks = read_blocks(ids, first, last)
        assert same_blocks(blocks, _uncached(ids, first, last)), (step, changes, view)
        assert cells_of(blocks) == plain_cells(ids, first, last)


def test_a_moving_window_keeps_no_frames_older_than_its_recent_reads_asked_for(
    cache_mb: Any,
) -> None:
    ids = fill_store(endpoints=1, frames=80)
    reads = 3 * LISTING_RECENT_READS
    for i in range(reads):
        read_blocks(ids, 15 * i, 15 * i + 285)
    oldest_start = 15 * (reads - LISTING_RECENT_READS)
    listing, _ = SPAN_LISTINGS.take(ids, micros(at(15 * reads)))[ids[0]]
    assert listing.start == micros(at(oldest_start))
    assert len(listing) == (15 * (reads - 1) + 285 - oldest_start) // 15 + 1


def test_the_listings_keep_to_their_bound_in_frames_dropping_the_least_recently_read(
    cache_mb: Any,
) -> None:
    ids = fill_store(endpoints=3, frames=20)
    with mock.patch.object(store_listings, "LISTING_CACHE_ROWS", 45):  # room for two endpoints' 20
        read_blocks(ids[:1], 0, 285)
        blocks = read_blocks(ids[1:], 0, 285)
        assert SPAN_LISTINGS.rows == 40 and len(SPAN_LISTINGS) == 2
        assert cells_of(blocks) == plain_cells(ids[1:], 0, 285)
        with Listings() as listed:
            read_blocks(ids[1:], 0, 285)
            read_blocks(ids[:1], 0, 285)
        assert listed.frames == [20]  # the first endpoint's frames alone: it was dropped
