"""A scrape encoded for the store, without Django: the part of the store's face that scrape
workers use (they run in processes with no Django set up).

A scrape is stored as its layout (the ordered series), kept once per distinct digest,
and one compressed values vector per scrape (see `codec`).
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from inventory.exposition import Family
from inventory.store.codec import (
    LayoutMemo,
    Series,
    decode_layout,
    decode_values,
    encode_layout,
    encode_values,
    frame_from_families,
)

# The decoders too: what a scrape worker encoded is read back by its tests the same way.
__all__ = [
    "EncodedFrame",
    "LayoutMemo",
    "Series",
    "decode_layout",
    "decode_values",
    "frame_encode",
    "frame_layout",
]


@dataclass(frozen=True)
class EncodedFrame:
    """One scrape as the store keeps it. `layout_blob` is set only when the layout is new
    among the endpoint's recent ones (the store may already hold it)."""

    digest: str
    series_count: int
    values_blob: bytes
    layout_blob: bytes | None

    def same_layout(self, values: Sequence[float]) -> EncodedFrame:
        """A later scrape of the same series: these values, in this frame's layout order."""
        return EncodedFrame(self.digest, self.series_count, encode_values(array("d", values)), None)


def frame_encode(endpoint: Hashable, families: Iterable[Family], memo: LayoutMemo) -> EncodedFrame:
    """Encode one scrape of `endpoint`; `memo` remembers the endpoint's recent layouts so an
    unchanged one is neither hashed nor sent again."""
    frame = frame_from_families(families)
    digest, changed = memo.digest(endpoint, frame.layout)
    return EncodedFrame(
        digest=digest,
        series_count=len(frame.layout),
        values_blob=encode_values(frame.values),
        layout_blob=encode_layout(frame.layout) if changed else None,
    )


def frame_layout(families: Iterable[Family]) -> tuple[Series, ...]:
    """The series (name, labels) a frame of these families holds, in the order of its values."""
    return frame_from_families(families).layout
