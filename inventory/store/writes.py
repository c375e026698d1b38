"""Writes of the embedded store: a cycle's frames, and retention.

Scrapers encode each scrape in their worker processes (`encoding.frame_encode`); the
cycle's transaction then hands the encoded frames to `frames_write`.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Max
from django.utils import timezone

from inventory.models import SampleFrame, SeriesSet
from inventory.store.encoding import EncodedFrame


@dataclass(frozen=True)
class FrameWrite:
    """A scrape to store: which endpoint, when, and its encoded frame."""

    endpoint_id: int
    at: datetime
    frame: EncodedFrame


@dataclass(frozen=True)
class FramesWritten:
    # endpoint id -> the stored layout (series set) of its frame
    series_sets: dict[int, int]
    # endpoints whose layout the store does not hold and whose frame was not sent with it
    # (restored or pruned): no frame was written, the scraper must send the layout again
    lost_layouts: tuple[int, ...]
    frames: int


def frames_write(writes: Sequence[FrameWrite], *, resolution: timedelta) -> FramesWritten:
    """Store one cycle's frames; call inside the cycle's transaction. A frame closer than
    `resolution` to its endpoint's newest stored frame is not written (its layout is)."""
    ids = [w.endpoint_id for w in writes]
    # Only a resolution limit needs the previous frame times; with none (the default)
    # skip the query, which would otherwise scan the whole retention window.
    latest = _latest_frame_times(ids) if resolution else {}
    known = {
        (endpoint_id, digest): pk
        for endpoint_id, digest, pk in SeriesSet.objects.filter(
            endpoint_id__in=ids, digest__in={w.frame.digest for w in writes}
        ).values_list("endpoint_id", "digest", "pk")
    }
    series_sets: dict[int, int] = {}
    lost: list[int] = []
    frames: list[SampleFrame] = []
    for write in writes:
        frame = write.frame
        series_set_id = known.get((write.endpoint_id, frame.digest))
        if series_set_id is None:
            if frame.layout_blob is None:
                lost.append(write.endpoint_id)
                continue
            series_set_id = SeriesSet.objects.create(
                endpoint_id=write.endpoint_id,
                digest=frame.digest,
                series_blob=frame.layout_blob,
                series_count=frame.series_count,
                first_seen_at=write.at,
            ).pk
        series_sets[write.endpoint_id] = series_set_id
        last = latest.get(write.endpoint_id)
        if last is None or write.at - last >= resolution:
            frames.append(
                SampleFrame(
                    endpoint_id=write.endpoint_id,
                    series_set_id=series_set_id,
                    at=write.at,
                    values_blob=frame.values_blob,
                    # Fresh per row: see SampleFrame.token (the read cache's key).
                    token=secrets.randbits(63),
                )
            )
    SampleFrame.objects.bulk_create(frames, ignore_conflicts=True)
    return FramesWritten(series_sets, tuple(lost), len(frames))


def _latest_frame_times(endpoint_ids: list[int]) -> dict[int, datetime]:
    # Bounded to the last day: enough for any sensible resolution, and index-friendly.
    since = timezone.now() - timedelta(days=1)
    rows = (
        SampleFrame.objects.filter(endpoint_id__in=endpoint_ids, at__gte=since)
        .values("endpoint_id")
        .annotate(last=Max("at"))
    )
    return {row["endpoint_id"]: row["last"] for row in rows}


def frames_prune(*, before: datetime) -> int:
    """Delete frames stored before `before`; return how many went."""
    deleted, _ = SampleFrame.objects.filter(at__lt=before).delete()
    return deleted
