"""The embedded sample store, and its only face: write a cycle, read a window, prune.

Nothing outside this package touches stored frames, layouts or their encoding.
Writes: `frame_encode` (in the scrape worker), `frames_write` (one cycle, inside its
transaction), `frames_prune`. Reads: `StoreWindow` (the frames of some endpoints, names
and span, read once and cut into `SeriesChunk` matrices, with failed scrapes as stale
markers), `store_read` (the same, series by series), `label_values`, `series_labels`,
`layout_runs` (each endpoint's layouts over time) and `current_layouts`;
`caches_clear` empties this process's read caches.
Inside: `encoding` and `codec`, `rows`, `reads`, `frame_cache` and `span_listings` (the
per-process caches of decompressed frames and of which frames a span holds), `chunks`,
`window`, `writes`.

Scrape workers run without Django, so only the encoding is imported eagerly; the names
that need the ORM load on first use (PEP 562), and `import inventory.store.encoding`
stays free of Django.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from inventory.store.encoding import EncodedFrame, LayoutMemo, Series, frame_encode, frame_layout

if TYPE_CHECKING:
    from inventory.store.chunks import LabelSet, SeriesChunk
    from inventory.store.reads import (
        DecodedFrame,
        FrameBlock,
        LayoutRun,
        caches_clear,
        current_layouts,
        frame_blocks,
        frames_in_window,
        label_values,
        label_values_ever,
        layout_runs,
        micros,
        series_labels,
        store_span,
    )
    from inventory.store.window import (
        ChunkRead,
        RawSeries,
        ReadNeed,
        StoreRead,
        StoreWindow,
        store_read,
    )
    from inventory.store.writes import FramesWritten, FrameWrite, frames_prune, frames_write

_NEEDS_DJANGO = {
    "inventory.store.chunks": ("LabelSet", "SeriesChunk"),
    "inventory.store.reads": (
        "DecodedFrame",
        "FrameBlock",
        "LayoutRun",
        "caches_clear",
        "current_layouts",
        "frame_blocks",
        "frames_in_window",
        "label_values",
        "label_values_ever",
        "layout_runs",
        "micros",
        "series_labels",
        "store_span",
    ),
    "inventory.store.window": (
        "ChunkRead",
        "RawSeries",
        "ReadNeed",
        "StoreRead",
        "StoreWindow",
        "store_read",
    ),
    "inventory.store.writes": ("FramesWritten", "FrameWrite", "frames_prune", "frames_write"),
}
_MODULE_OF = {name: module for module, names in _NEEDS_DJANGO.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'inventory.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "ChunkRead",
    "DecodedFrame",
    "EncodedFrame",
    "FrameBlock",
    "FrameWrite",
    "FramesWritten",
    "LabelSet",
    "LayoutRun",
    "LayoutMemo",
    "RawSeries",
    "ReadNeed",
    "Series",
    "SeriesChunk",
    "StoreRead",
    "StoreWindow",
    "caches_clear",
    "current_layouts",
    "frame_blocks",
    "frame_encode",
    "frame_layout",
    "frames_in_window",
    "frames_prune",
    "frames_write",
    "label_values",
    "label_values_ever",
    "layout_runs",
    "micros",
    "series_labels",
    "store_read",
    "store_span",
]
