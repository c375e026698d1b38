"""Reads of the embedded sample store (writes happen in services, one cycle at a time)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from inventory.models import SampleFrame, SeriesSet
from inventory.store_codec import Series, decode_layout, decode_values


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
    """Frames with start <= at <= end, oldest first, each layout decoded once."""
    frames = (
        SampleFrame.objects.filter(endpoint_id__in=endpoint_ids, at__gte=start, at__lte=end)
        .order_by("at", "endpoint_id")
        .values_list("endpoint_id", "at", "series_set_id", "values_blob")
    )
    layouts: dict[int, list[Series]] = {}
    for endpoint_id, at, series_set_id, blob in frames.iterator(chunk_size=500):
        layout = layouts.get(series_set_id)
        if layout is None:
            series_blob = SeriesSet.objects.values_list("series_blob", flat=True).get(
                pk=series_set_id
            )
            layout = layouts[series_set_id] = decode_layout(bytes(series_blob))
        yield DecodedFrame(endpoint_id, at, layout, decode_values(blob))
