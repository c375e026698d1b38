"""Frame rows as the store's reads pass them between them: exact micros since the epoch,
the raw reader of frame rows (`frame_rows`), and the shapes of the per-block rows a read
assembles (`BlockRows`, keyed by `BlockKey`, frames not read yet named by `FrameKey`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections
from django.db.models import QuerySet
from django.db.models.sql.constants import MULTI
from django.utils.dateparse import parse_datetime
from django.utils.timezone import make_aware

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH = EPOCH.replace(tzinfo=None)
MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """Exact microseconds since the epoch (floats would blur the inclusive window edges)."""
    return (moment - EPOCH) // MICROSECOND


# (pk, token) of a frame: together they name one frame's values for good. The pk alone
# does not: SQLite hands a rolled-back rowid out again, to another frame of the same
# endpoint and time.
FrameKey = tuple[int, int]
BlockKey = tuple[int, int]  # (endpoint id, series set id)

# A frame's micros and, when its layout holds wanted columns, its decompressed values bytes
# or, for values not read yet, its key until `frame_cache.with_values`: per block, in time
# order.
BlockRows = dict[BlockKey, tuple[Sequence[int], list[bytes | FrameKey]]]
# The same once every frame's values are read: decompressed values bytes only.
ValueRows = dict[BlockKey, tuple[Sequence[int], list[bytes]]]


def frame_rows(frames: QuerySet[Any, Any]) -> Iterator[tuple[Any, ...]]:
    """Each row of `frames`, a values_list whose first columns are endpoint id and at, with
    at as exact micros, as `.iterator(chunk_size=500)` reads it but without Django's
    per-row converters: parsing and making `at` aware for every frame costs about as much
    as decompressing its values. Only `at` needs converting; the integer and blob columns
    after it pass as the driver returns them."""
    connection = connections[frames.db]
    tz = connection.timezone
    utc = tz is not None and tz.utcoffset(None) == timedelta(0)
    compiler = frames.query.get_compiler(using=frames.db)
    chunked = not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    for chunk in compiler.execute_sql(MULTI, chunked_fetch=chunked, chunk_size=500):
        for endpoint_id, at, *rest in chunk:
            if not isinstance(at, datetime):
                at = parse_datetime(at)  # a driver without a datetime converter: ISO text
            if at.tzinfo is not None:  # drivers that know time zones (PostgreSQL)
                yield endpoint_id, micros(at), *rest
            elif utc:  # naive UTC (SQLite): no need to attach a zone to subtract
                yield endpoint_id, (at - NAIVE_EPOCH) // MICROSECOND, *rest
            else:  # naive in the connection's own zone, as Django would make it aware
                yield endpoint_id, micros(make_aware(at, tz)), *rest
