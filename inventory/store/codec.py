"""Encoding of scraped samples for the embedded store.

A scrape becomes two things: its *layout* (the ordered series, name + labels),
which rarely changes between scrapes of one endpoint, and its *values*, one
float64 per series. Layouts are stored once per distinct digest; values are
stored per scrape as one zlib-compressed vector. Raw values are kept, so
counter resets stay exactly as they happened.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from inventory.exposition import Family

Series = tuple[str, Mapping[str, str]]

# Layouts remembered per endpoint (see LayoutMemo).
RECENT_LAYOUTS = 4
# zlib level 1: most of level 9's gain on float vectors at a fraction of the CPU.
VALUES_COMPRESSION_LEVEL = 1


# Families whose samples never include a `_created` series.
PLAIN_TYPES = frozenset({"gauge", "untyped", "unknown", "info", "stateset"})


@dataclass(frozen=True)
class Frame:
    """The samples of one scrape: layout and values in the same order."""

    layout: tuple[Series, ...]
    values: array


def frame_from_families(families: Iterable[Family]) -> Frame:
    """Flatten parsed families into one frame, leaving out `_created` timestamps."""
    samples = [
        sample
        for family in families
        for sample in (
            family.samples
            if family.type in PLAIN_TYPES
            # _created is when a counter was born, not a measurement: the store skips it.
            else [s for s in family.samples if not s.name.endswith("_created")]
        )
    ]
    layout = tuple([(sample.name, sample.labels) for sample in samples])
    return Frame(layout, array("d", [sample.value for sample in samples]))


def layout_digest(layout: Sequence[Series]) -> str:
    hasher = hashlib.sha256()
    for name, labels in layout:
        hasher.update(name.encode())
        for key in sorted(labels):
            hasher.update(b"\x00" + key.encode() + b"\x01" + labels[key].encode())
        hasher.update(b"\x02")
    return hasher.hexdigest()


def encode_layout(layout: Sequence[Series]) -> bytes:
    plain = [[name, dict(labels)] for name, labels in layout]
    return zlib.compress(json.dumps(plain, separators=(",", ":")).encode(), 6)


def decode_layout(blob: bytes) -> list[Series]:
    return [(name, labels) for name, labels in json.loads(zlib.decompress(blob))]


def encode_values(values: array) -> bytes:
    return zlib.compress(values.tobytes(), VALUES_COMPRESSION_LEVEL)


def decode_values(blob: bytes | memoryview) -> array:
    values = array("d")
    values.frombytes(zlib.decompress(bytes(blob)))
    return values


class LayoutMemo:
    """The last few layouts reported per endpoint, most recent first.

    An unchanged layout costs one tuple comparison (label dicts come from the
    parser's cache, so equal layouts are mostly the same objects and the
    comparison short-circuits on identity) instead of a hash of every label.
    Keeping a few, not one, makes an endpoint that flips between layouts (a
    LoRA adapter mix coming and going) cheap too.
    """

    def __init__(self, keep: int = RECENT_LAYOUTS) -> None:
        self.keep = keep
        self._recent: dict[Hashable, list[tuple[tuple[Series, ...], str]]] = {}

    def forget(self, endpoint: Hashable) -> None:
        self._recent.pop(endpoint, None)

    def digest(self, endpoint: Hashable, layout: tuple[Series, ...]) -> tuple[str, bool]:
        """Return the digest and whether the layout is new among the endpoint's recent ones."""
        recent = self._recent.setdefault(endpoint, [])
        for position, (known, digest) in enumerate(recent):
            if known == layout:
                if position:
                    recent.insert(0, recent.pop(position))
                return digest, False
        digest = layout_digest(layout)
        seen = any(known_digest == digest for _, known_digest in recent)
        recent.insert(0, (layout, digest))
        del recent[self.keep :]
        return digest, not seen
