"""Chunks: the series of one sample name on one instance, or on instances scraped
together, as one matrix; and the per-block column indexes they are cut from.

`StoreWindow` (window) builds them from the store's frame blocks; the evaluator
(queries.local.backend) and the histogram checks (queries.local.histogram_checks) work on them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fleetscope.lib.lru import LruCache
from inventory.store.codec import Series
from inventory.store.reads import FrameBlock

LabelSet = tuple[tuple[str, str], ...]


@dataclass(slots=True, eq=False)
class SeriesChunk:
    """The series of one sample name on one instance, or on several instances scraped at
    the same instants, as one matrix on their frame times: what the evaluator works on, a
    numpy pass per chunk instead of a Python object per series.

    Every row shares `times` (the stored frames in the span) and `events`. Where a series
    is missing from a frame (its endpoint's layout changed in the span) its value is NaN
    and `present` says so; `present` is None when every row is in every frame, the usual
    case. A missing sample behaves as Prometheus' stale marker: an instant read there
    finds nothing, and counter maths skips it.
    """

    name: str
    labels: tuple[Mapping[str, str], ...]  # per row, including `instance`
    keys: tuple[LabelSet, ...]  # per row: sorted labels with `instance`, in key order per instance
    times: np.ndarray  # unix seconds, ascending
    values: np.ndarray  # (rows, frames)
    present: np.ndarray | None  # (rows, frames) bool, or None: all present
    events: np.ndarray  # the instances' scrape times (stored or failed), ascending
    # What is derived from the rows' labels alone (histograms by edge, groups): shared by
    # every chunk cut from the same block columns, so it is worked out once per process.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)


# A column of a block: its index, its labels as stored (without `instance`), and its key
# (sorted, with `instance`). Plain tuples: a window holds thousands, and every object that
# lives through a render adds to what the garbage collector walks.
_Column = tuple[int, Mapping[str, str], LabelSet]


# A block's columns of one name: indexes into its values, label dicts (with `instance`)
# and keys, in key order, and a memo for what is derived from those labels alone (it
# lives as long as the columns, across windows).
Columns = tuple[np.ndarray, tuple[Mapping[str, str], ...], tuple[LabelSet, ...], dict]


class _BlockIndex:
    """A block's columns by sample name, with each series' key (sorted labels with
    `instance`): the same for every block of one instance and layout, so it is built once
    per process rather than once per window (see `_block_index`)."""

    def __init__(self, series: tuple[Series, ...], instance: str) -> None:
        self.series = series  # held: while this lives, `id()`s of its entries stay theirs
        self.by_name: dict[str, list[_Column]] = {}
        mine = ("instance", instance)
        sorted_labels: dict[int, LabelSet] = {}
        for index, (name, labels) in enumerate(series):
            if "instance" in labels:
                key = tuple(sorted({**labels, "instance": instance}.items()))
            else:
                # Series of a layout share decoded label dicts (layouts are cached by
                # digest): sort each once, then slot `instance` in where sorting would put
                # it (label names are unique, so this is sorted).
                base = sorted_labels.get(id(labels))
                if base is None:
                    base = sorted_labels[id(labels)] = tuple(sorted(labels.items()))
                at = bisect_left(base, ("instance",))
                key = (*base[:at], mine, *base[at:])
            self.by_name.setdefault(name, []).append((index, labels, key))
        self._columns: dict[Hashable, Columns] = {}

    def columns(
        self, name: str, keep: Callable[[Mapping[str, str]], bool] | None, keep_key: Hashable
    ) -> Columns:
        """The columns of `name` that `keep` keeps, in key order: what a chunk takes from
        a block, worked out once for every read that asks the same."""
        found = self._columns.get((name, keep_key))
        if found is None:
            chosen = sorted(
                (key, index)
                for index, labels, key in self.by_name.get(name, ())
                if keep is None or keep(labels)
            )
            # Two threads may both build it: the same value, so the later write is harmless.
            found = self._columns[(name, keep_key)] = (
                np.array([index for _, index in chosen], dtype=np.intp),
                tuple(dict(key) for key, _ in chosen),
                tuple(key for key, _ in chosen),
                {},
            )
        return found


# Block indexes by (instance, identities of the layout entries), most recently used last.
# The entries are the cached decoded layout's own tuples, and each index holds them, so an
# identity in a key cannot be handed to another object while its entry lives.
_INDEXES: LruCache[tuple[str, tuple[int, ...]], _BlockIndex] = LruCache(1024)


def _block_index(series: tuple[Series, ...], instance: str) -> _BlockIndex:
    return _INDEXES.get_or_make(
        (instance, tuple(map(id, series))), lambda: _BlockIndex(series, instance)
    )


class Block:
    """A FrameBlock of one instance, with its columns indexed."""

    def __init__(self, block: FrameBlock, instance: str) -> None:
        self.at_micros = block.at_micros
        self.at = block.at
        self.values = block.values
        self.index = _block_index(block.series, instance)


def span_rows(micro: np.ndarray, start: int, end: int) -> slice:
    return slice(
        int(np.searchsorted(micro, start, side="left")),
        int(np.searchsorted(micro, end, side="right")),
    )


def between(
    chunk: SeriesChunk, frame_micros: np.ndarray, event_micros: np.ndarray, start: int, end: int
) -> SeriesChunk | None:
    """`chunk` cut to start <= t <= end (micros): what building it for that span gives.
    Series of a layout that has no frame in the span are left out, as they would be."""
    rows, events = span_rows(frame_micros, start, end), span_rows(event_micros, start, end)
    if rows.start == rows.stop:
        return None
    if (
        rows.start == 0
        and rows.stop == len(frame_micros)
        and events.start == 0
        and (events.stop == len(event_micros))
    ):
        return chunk
    present = None if chunk.present is None else chunk.present[:, rows]
    if present is None:
        return SeriesChunk(
            chunk.name, chunk.labels, chunk.keys, chunk.times[rows], chunk.values[:, rows],
            None, chunk.events[events], chunk.memo,
        )  # fmt: skip
    kept = np.flatnonzero(present.any(axis=1))
    if not len(kept):
        return None
    return SeriesChunk(
        chunk.name, tuple(chunk.labels[i] for i in kept), tuple(chunk.keys[i] for i in kept),
        chunk.times[rows], chunk.values[kept, rows], present[kept], chunk.events[events],
    )  # fmt: skip


# Memos of joined chunks, by the memos of the chunks joined (each entry holds those, so
# their ids stay theirs): a fleet's instances join the same way every render.
_JOINED_MEMOS: LruCache[tuple[int, ...], tuple[tuple[dict, ...], dict]] = LruCache(4096)


def joined(run: Sequence[SeriesChunk]) -> list[SeriesChunk]:
    """Chunks of one name on instances scraped at the same instants (same times, same
    events), as one chunk: every later pass (rates, checks, groups) runs once for the
    fleet instead of once per instance."""
    if len(run) <= 1:
        return list(run)
    _, memo = _JOINED_MEMOS.get_or_make(
        tuple(id(chunk.memo) for chunk in run), lambda: (tuple(c.memo for c in run), {})
    )
    rows: tuple[tuple[Mapping[str, str], ...], tuple[LabelSet, ...]] | None = memo.get("rows")
    if rows is None:  # the members' columns fix the rows, so this keeps with the memo
        rows = memo["rows"] = (
            tuple(labels for chunk in run for labels in chunk.labels),
            tuple(key for chunk in run for key in chunk.keys),
        )
    first = run[0]
    return [
        SeriesChunk(
            first.name,
            *rows,
            first.times,
            np.concatenate([chunk.values for chunk in run]),
            None,
            first.events,
            memo,
        )
    ]


def in_scrape_order(
    spans: Sequence[tuple[int, Block, slice]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The frames of one instance's block spans in the order the scrapes happened (time,
    then endpoint, as `read` orders the samples of a series): their micros, their seconds,
    and where each frame of the spans, taken in turn, lands (None: one span, in order)."""
    if len(spans) == 1:
        _, block, rows = spans[0]
        return block.at_micros[rows], block.at[rows], None
    micro = np.concatenate([block.at_micros[rows] for _, block, rows in spans])
    owners = np.concatenate(
        [np.full(rows.stop - rows.start, owner, dtype=np.int64) for owner, _, rows in spans]
    )
    order = np.lexsort((owners, micro))
    times = np.concatenate([block.at[rows] for _, block, rows in spans])[order]
    landing = np.empty(len(order), dtype=np.intp)
    landing[order] = np.arange(len(order))
    return micro[order], times, landing


def stitched(
    name: str, spans: Sequence[tuple[int, Block, slice]], columns: Sequence[Columns],
    times: np.ndarray, landing: np.ndarray, events: np.ndarray,
) -> SeriesChunk:  # fmt: skip
    """One chunk over several blocks (a layout change in the span, or two endpoints with
    one instance): every frame in scrape order (`times`, and `landing` from
    `in_scrape_order`), NaN where a series is not in a frame."""
    labels_of: dict[LabelSet, Mapping[str, str]] = {}
    for _, labels, column_keys, _ in columns:
        labels_of.update(zip(column_keys, labels, strict=True))
    keys = sorted(labels_of)
    row_of = {key: i for i, key in enumerate(keys)}
    values = np.full((len(keys), len(times)), np.nan)
    present = np.zeros(values.shape, dtype=bool)
    offset = 0
    for (_, block, rows), (index, _, block_keys, _) in zip(spans, columns, strict=True):
        frames = landing[offset : offset + rows.stop - rows.start]
        offset += rows.stop - rows.start
        if len(index):
            where = np.ix_(np.array([row_of[key] for key in block_keys], dtype=np.intp), frames)
            values[where] = block.values.T[index, rows]
            present[where] = True
    labels = tuple(labels_of[key] for key in keys)
    return SeriesChunk(
        name, labels, tuple(keys), times, values, None if present.all() else present, events
    )
