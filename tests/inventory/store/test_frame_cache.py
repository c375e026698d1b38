"""The cache of decompressed values behind `frame_blocks`: reads through it hold exactly
what the plain ORM read holds; values are named by (pk, token) so a reused pk cannot
serve stale values; a warm read fetches and decompresses only new frames; the cache keeps
to its bound in bytes and is off when the setting is 0."""

from __future__ import annotations

from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from unittest import mock

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory.models import SampleFrame, SeriesSet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.store.frame_cache import FRAME_CACHE
from inventory.store.span_listings import (
    SPAN_LISTINGS,
)
from inventory.targets import TargetSpec
from tests.inventory.badservers import send_body, serving
from tests.inventory.store.storecache import (
    Decompressions,
    cells_of,
    fill_store,
    frame_queries,
    new_endpoint,
    plain_cells,
    read_blocks,
    same_blocks,
    values_for,
    write_frame,
)
from tests.queries.storefill import at

pytestmark = pytest.mark.django_db


def test_a_cached_second_read_returns_exactly_what_the_plain_read_returns(cache_mb: Any) -> None:
    ids = fill_store()
    cold = read_blocks(ids, 30, 240)
    assert len(FRAME_CACHE) == 3 * 15  # the frames at 30 s .. 240 s of three endpoints
    warm = read_blocks(ids, 30, 240)
    assert cells_of(warm) == plain_cells(ids, 30, 240)
    assert same_blocks(warm, cold)
    cache_mb(0)
    assert same_blocks(read_blocks(ids, 30, 240), warm)  # and what an uncached read returns


def test_a_second_read_of_the_same_span_fetches_and_decompresses_nothing(cache_mb: Any) -> None:
    ids = fill_store()
    with CaptureQueriesContext(connection) as first, Decompressions() as unpacked_first:
        read_blocks(ids, 0, 285)
    with CaptureQueriesContext(connection) as second, Decompressions() as unpacked_second:
        read_blocks(ids, 0, 285)
    # The listing of the span (nothing cached to check yet), then its values.
    assert unpacked_first.count == 60 and len(frame_queries(first)) == 2
    assert unpacked_second.count == 0
    assert len(frame_queries(second)) == 1  # the summary alone: nothing listed or fetched


def test_a_window_moved_by_one_step_decompresses_only_the_new_frames(cache_mb: Any) -> None:
    ids = fill_store()
    read_blocks(ids, 0, 285)
    for endpoint_id in ids:
        series_set = SeriesSet.objects.get(endpoint_id=endpoint_id)
        write_frame(series_set.endpoint, series_set, 300, values_for(endpoint_id, 6))
    with CaptureQueriesContext(connection) as moved, Decompressions() as unpacked:
        blocks = read_blocks(ids, 15, 300)
    assert unpacked.count == len(ids)
    assert len(frame_queries(moved)) == 3  # the summary, the newest frames, their values
    assert cells_of(blocks) == plain_cells(ids, 15, 300)


def test_a_frame_rolled_back_and_written_again_under_its_pk_is_read_with_its_new_values(
    cache_mb: Any,
) -> None:
    endpoint, series_set = new_endpoint("r0")
    write_frame(endpoint, series_set, 0, values_for(1, 6))
    with pytest.raises(DatabaseError), transaction.atomic():
        rolled_back = write_frame(endpoint, series_set, 15, [1.0] * 6)
        read_blocks([endpoint.pk], 0, 15)  # caches the values of a frame that will never have been
        raise DatabaseError("the cycle fails and its transaction is rolled back")
    assert len(FRAME_CACHE) == 2
    # SQLite hands the rowid out again by itself; PostgreSQL is made to, to the same effect.
    again = write_frame(endpoint, series_set, 15, [2.0] * 6, pk=rolled_back.pk)
    assert (again.pk, again.at) == (rolled_back.pk, rolled_back.at)
    blocks = read_blocks([endpoint.pk], 0, 15)
    assert blocks[0].values[-1].tolist() == [2.0] * 3
    assert cells_of(blocks) == plain_cells([endpoint.pk], 0, 15)


def test_frames_written_before_tokens_are_read_correctly_but_never_cached(cache_mb: Any) -> None:
    endpoint, series_set = new_endpoint("r0")
    for i in range(4):
        old = {"token": 0} if i % 2 else {}  # frames 1 and 3 as written before the migration
        write_frame(endpoint, series_set, 15 * i, values_for(i, 6), **old)
    with Decompressions() as unpacked:
        read_blocks([endpoint.pk], 0, 45)
        with CaptureQueriesContext(connection) as warm:
            blocks = read_blocks([endpoint.pk], 0, 45)
    assert unpacked.count == 4 + 2  # the two token-0 frames, twice
    # Their endpoint's listing is never kept: the span is listed again, with their values.
    assert len(frame_queries(warm)) == 1
    assert len(FRAME_CACHE) == 2 and len(SPAN_LISTINGS) == 0
    assert cells_of(blocks) == plain_cells([endpoint.pk], 0, 45)


def test_a_frame_deleted_between_the_span_query_and_the_values_fetch_is_left_out(
    cache_mb: Any,
) -> None:
    ids = fill_store(endpoints=2, frames=4)
    doomed = SampleFrame.objects.get(endpoint_id=ids[0], at=at(15))
    take = FRAME_CACHE.take

    def prune_then_take(keys: Any) -> Any:
        doomed.delete()  # retention runs in the scheduler thread meanwhile
        return take(keys)

    with mock.patch.object(FRAME_CACHE, "take", prune_then_take):
        blocks = read_blocks(ids, 0, 45)
    assert [len(block.at) for block in blocks] == [3, 4]
    assert cells_of(blocks) == plain_cells(ids, 0, 45)


def test_the_byte_bound_evicts_the_least_recently_read_frames(cache_mb: Any) -> None:
    width = 128  # 1 KiB of values a frame
    ids = fill_store(endpoints=1, frames=10, width=width)
    entry = 8 * width + FRAME_CACHE.ENTRY_OVERHEAD
    cache_mb(5 * entry / 2**20)  # room for five frames
    blocks = read_blocks(ids, 0, 135)  # all ten: the first five make way for the last five
    assert len(FRAME_CACHE) == 5 and FRAME_CACHE.size_bytes <= 5 * entry
    assert cells_of(blocks) == plain_cells(ids, 0, 135)
    with Decompressions() as newest:
        read_blocks(ids, 75, 135)
    with Decompressions() as oldest:
        read_blocks(ids, 0, 60)
    assert (newest.count, oldest.count) == (0, 5)
    assert len(FRAME_CACHE) == 5 and FRAME_CACHE.size_bytes <= 5 * entry


def test_the_cache_drops_what_was_used_longest_ago_first() -> None:
    entry = 8 + FRAME_CACHE.ENTRY_OVERHEAD
    FRAME_CACHE.keep({(1, 1): b"a" * 8, (2, 1): b"b" * 8, (3, 1): b"c" * 8}, 3 * entry)
    assert FRAME_CACHE.take([(1, 1)]) == {(1, 1): b"a" * 8}  # now the most recent
    FRAME_CACHE.keep({(4, 1): b"d" * 8}, 3 * entry)
    assert set(FRAME_CACHE.take([(1, 1), (2, 1), (3, 1), (4, 1)])) == {(1, 1), (3, 1), (4, 1)}
    FRAME_CACHE.keep({(5, 1): b"e" * 4 * entry}, 3 * entry)  # larger than the bound: skipped
    assert len(FRAME_CACHE) == 3 and FRAME_CACHE.size_bytes == 3 * entry


def test_with_the_setting_at_zero_nothing_is_cached_and_every_read_decompresses(
    cache_mb: Any,
) -> None:
    ids = fill_store()
    read_blocks(ids, 0, 285)
    assert len(FRAME_CACHE) == 60
    cache_mb(0)
    with CaptureQueriesContext(connection) as reads, Decompressions() as unpacked:
        read_blocks(ids, 0, 285)
        blocks = read_blocks(ids, 0, 285)
    assert unpacked.count == 2 * 60
    # Turning it off frees both caches.
    assert len(FRAME_CACHE) == 0 and FRAME_CACHE.size_bytes == 0
    assert len(SPAN_LISTINGS) == 0 and SPAN_LISTINGS.rows == 0
    assert len(frame_queries(reads)) == 2  # values come with each read's one span query
    assert cells_of(blocks) == plain_cells(ids, 0, 285)


def _steady(handler: BaseHTTPRequestHandler) -> None:
    send_body(handler, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")


def test_each_frame_a_scrape_cycle_writes_gets_its_own_random_token() -> None:
    with serving(_steady) as server:
        spec = TargetSpec(server.url(), "vllm", {})
        fleet = targets_import(fleet_slug="tokens", specs=[spec]).fleet
        for cycle in range(3):
            fleet_scrape(fleet_id=fleet.pk, now=timezone.now() + timedelta(seconds=30 * cycle))
    tokens = list(SampleFrame.objects.values_list("token", flat=True))
    assert len(tokens) == 3 and 0 not in tokens and len(set(tokens)) == 3
