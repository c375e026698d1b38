"""Raw series out of the embedded store, identified the way Prometheus identifies them.

A series is a sample name plus its labels plus `instance` (the endpoint's
host:port, which Prometheus adds from the target and the store does not keep).
Next to each series' samples this keeps its endpoint's *events*: every stored
scrape and every failed one. Prometheus writes a stale marker when a series
is missing from a scrape or the scrape fails; an event without the series
plays that part here, so a replica that stopped answering drops out at once
instead of lingering for the 5-minute lookback (and never turns into a zero).

Reads go through a `StoreWindow`: the frames of some endpoints, sample names
and time span, fetched in one query and decoded once. `run_queries` builds one
window covering every plan of a page, so forty specs over the same replicas
decode each stored frame once rather than forty times. The evaluator reads them
as chunks (chunks: one matrix per name and group of instances scraped
together); `store_read` reads them series by series, the plain form the tests
hold chunks to.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np

from inventory.models import ScrapeRun, ScrapeStatus
from inventory.store.chunks import (
    Block,
    LabelSet,
    SeriesChunk,
    between,
    in_scrape_order,
    joined,
    span_rows,
    stitched,
)
from inventory.store.reads import frame_blocks, micros


@dataclass(frozen=True, slots=True)
class RawSeries:
    name: str
    labels: Mapping[str, str]  # including `instance`
    times: np.ndarray  # unix seconds, ascending
    values: np.ndarray
    events: np.ndarray  # the endpoint's scrape times (stored or failed), ascending


@dataclass(frozen=True)
class ChunkRead:
    chunks: tuple[SeriesChunk, ...]  # by name, then instance
    failed_scrapes: Mapping[str, int]  # instance -> failed scrapes in the window


@dataclass(frozen=True)
class StoreRead:
    series: tuple[RawSeries, ...]
    failed_scrapes: Mapping[str, int]  # instance -> failed scrapes in the window


@dataclass(frozen=True)
class ReadNeed:
    """What one evaluation step reads: these names on these endpoints, start <= t <= end."""

    endpoints: Mapping[int, str]  # endpoint id -> instance
    names: frozenset[str]
    start: datetime
    end: datetime


def _label_filter(
    model_name: str | None, match: Sequence[tuple[str, str]]
) -> Callable[[Mapping[str, str]], bool] | None:
    """A predicate on a series' labels, or None when every series is kept (the common
    case, which then costs nothing per column)."""
    wanted = dict(match)
    if model_name is not None:
        wanted["model_name"] = model_name
    if not wanted:
        return None

    def keep(labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in wanted.items())

    return keep


class _Instance(NamedTuple):
    """One instance's part of a span. Equal times and equal events are one array each
    (interned), so instances scraped together are told by identity, without comparing."""

    spans: list[tuple[int, Block, slice]]  # (endpoint id, block, its rows in the span)
    times: np.ndarray  # frame seconds, in scrape order
    landing: np.ndarray | None  # where each span's frames land in `times`; None: one block
    events: np.ndarray  # event seconds
    frame_micros: np.ndarray
    event_micros: np.ndarray


class StoreWindow:
    """The store's frames and failed scrapes for some endpoints, names and span, read once."""

    def __init__(
        self, *, endpoints: Mapping[int, str], names: frozenset[str], start: datetime,
        end: datetime,
    ) -> None:  # fmt: skip
        self.endpoints = dict(endpoints)
        self.names = names
        self.start, self.end = start, end
        # What evaluators derived from this window (reads, checks, rates), for the next plan.
        self.memo: dict[Hashable, Any] = {}
        self._label_dicts: dict[LabelSet, dict[str, str]] = {}
        # Spans worked out once, by the key's kind: chunks and instances (lists), failed
        # scrapes (dicts).
        self._spans: dict[Hashable, Any] = {}
        self._arrays: dict[bytes, np.ndarray] = {}
        ids = list(self.endpoints)
        self._blocks: dict[int, list[Block]] = {endpoint_id: [] for endpoint_id in ids}
        event_micros: dict[int, list[np.ndarray]] = {endpoint_id: [] for endpoint_id in ids}
        event_times: dict[int, list[np.ndarray]] = {endpoint_id: [] for endpoint_id in ids}
        for block in frame_blocks(endpoint_ids=ids, start=start, end=end, names=names):
            instance = self.endpoints[block.endpoint_id]
            self._blocks[block.endpoint_id].append(Block(block, instance))
            event_micros[block.endpoint_id].append(block.at_micros)
            event_times[block.endpoint_id].append(block.at)
        failed = ScrapeRun.objects.filter(
            endpoint_id__in=ids,
            status=ScrapeStatus.FAILED,
            started_at__gte=start,
            started_at__lte=end,
        ).values_list("endpoint_id", "started_at")
        failed_micros: dict[int, list[int]] = {endpoint_id: [] for endpoint_id in ids}
        for endpoint_id, started_at in failed:
            failed_micros[endpoint_id].append(micros(started_at))
            event_micros[endpoint_id].append(np.array([micros(started_at)], dtype=np.int64))
            event_times[endpoint_id].append(np.array([started_at.timestamp()]))
        self._failed = {k: np.sort(np.array(v, dtype=np.int64)) for k, v in failed_micros.items()}
        # Every stored or failed scrape of an endpoint, in time order: its stale markers.
        self._events: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for endpoint_id in ids:
            micro = np.concatenate([np.empty(0, np.int64), *event_micros[endpoint_id]])
            times = np.concatenate([np.empty(0), *event_times[endpoint_id]])
            order = np.argsort(micro, kind="stable")
            self._events[endpoint_id] = (micro[order], times[order])

    @classmethod
    def covering(cls, needs: Iterable[ReadNeed]) -> StoreWindow | None:
        """One window holding everything `needs` ask for (the union of endpoints and names,
        the widest span); None when there is nothing to read."""
        needs = list(needs)
        if not needs:
            return None
        endpoints: dict[int, str] = {}
        for need in needs:
            endpoints.update(need.endpoints)
        return cls(
            endpoints=endpoints,
            names=frozenset().union(*(need.names for need in needs)),
            start=min(need.start for need in needs),
            end=max(need.end for need in needs),
        )

    def covers(self, need: ReadNeed) -> bool:
        return (
            self.start <= need.start
            and need.end <= self.end
            and need.names <= self.names
            and all(self.endpoints.get(k) == v for k, v in need.endpoints.items())
        )

    def _serving(self, need: ReadNeed) -> StoreWindow:
        """This window if it covers `need`; otherwise (only a caller that planned its reads
        wrongly gets there) a window of its own, so the answer is right anyway."""
        if self.covers(need):
            return self
        return StoreWindow(
            endpoints=need.endpoints, names=need.names, start=need.start, end=need.end
        )

    def read(
        self, need: ReadNeed, *, model_name: str | None = None,
        match: Sequence[tuple[str, str]] = (),
    ) -> StoreRead:  # fmt: skip
        """Every series named in `need` on its endpoints within its span, as if read alone."""
        if (window := self._serving(need)) is not self:
            return window.read(need, model_name=model_name, match=match)
        keep = _label_filter(model_name, match)
        start, end = micros(need.start), micros(need.end)
        # (name, labels) -> pieces of (endpoint id, micros, times, values), one per block.
        pieces: dict[tuple[str, LabelSet], list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]]
        pieces = {}
        for endpoint_id in need.endpoints:
            for block in self._blocks[endpoint_id]:
                rows = span_rows(block.at_micros, start, end)
                if rows.start == rows.stop:
                    continue
                # One copy of the block's times for all its columns: the series of one
                # endpoint then share a `times` array, which the evaluator batches on.
                micro, times = block.at_micros[rows], block.at[rows].copy()
                for name in need.names:
                    for index, labels, key in block.index.by_name.get(name, ()):
                        if keep is None or keep(labels):
                            pieces.setdefault((name, key), []).append(
                                (endpoint_id, micro, times, block.values[rows, index])
                            )
        # Each endpoint's events in the span, sliced once rather than once per series.
        events = {}
        for endpoint_id in need.endpoints:
            event_micro, event_times = self._events[endpoint_id]
            events[endpoint_id] = event_times[span_rows(event_micro, start, end)]
        # One labels dict per key for the whole window: series only ever read them.
        dicts = self._label_dicts
        series = tuple(
            self._series(
                name, dicts.get(key) or dicts.setdefault(key, dict(key)), pieces[(name, key)],
                events,
            )
            for name, key in sorted(pieces)
        )  # fmt: skip
        return StoreRead(series, self._failed_between(need.endpoints, start, end))

    def chunks(
        self, need: ReadNeed, *, model_name: str | None = None,
        match: Sequence[tuple[str, str]] = (),
    ) -> ChunkRead:  # fmt: skip
        """What `read` returns, as one SeriesChunk per instance and name."""
        if (window := self._serving(need)) is not self:
            return window.chunks(need, model_name=model_name, match=match)
        start, end = micros(need.start), micros(need.end)
        # Specs read the same names over several spans (each its own range or lookback):
        # chunks are built once over the whole window, and each read takes a time slice.
        chunks = []
        for name in sorted(need.names):
            key = ("chunks", name, model_name, tuple(match), tuple(need.endpoints.items()))
            whole = self._spans.get(key)
            if whole is None:
                whole = self._spans[key] = self._whole_chunks(
                    name, need.endpoints, model_name, match
                )
            for chunk, frame_micros, event_micros in whole:
                part = between(chunk, frame_micros, event_micros, start, end)
                if part is not None:
                    chunks.append(part)
        return ChunkRead(tuple(chunks), self._failed_between(need.endpoints, start, end))

    def _whole_chunks(
        self, name: str, endpoints: Mapping[int, str], model_name: str | None,
        match: Sequence[tuple[str, str]],
    ) -> list[tuple[SeriesChunk, np.ndarray, np.ndarray]]:  # fmt: skip
        """The chunks of `name` on `endpoints` over the window's whole span, each with the
        micros of its frames and of its events (exact edges for slicing)."""
        keep = _label_filter(model_name, match)
        keep_key = (model_name, tuple(match))
        start, end = micros(self.start), micros(self.end)
        found: list[tuple[SeriesChunk, np.ndarray, np.ndarray]] = []
        run: list[tuple[SeriesChunk, np.ndarray, np.ndarray]] = []  # scraped together

        def flush() -> None:
            if run:
                found.append((joined([chunk for chunk, _, _ in run])[0], run[0][1], run[0][2]))
                run.clear()

        for spans, times, landing, events, frame_micros, event_micros in self._instance_spans(
            endpoints, start, end
        ):
            columns = [block.index.columns(name, keep, keep_key) for _, block, _ in spans]
            if not any(len(index) for index, *_ in columns):
                continue
            if len(spans) > 1:
                assert landing is not None  # in_scrape_order gives it for several spans
                flush()
                chunk = stitched(name, spans, columns, times, landing, events)
                found.append((chunk, frame_micros, event_micros))
                continue
            (_, block, rows), (index, labels, keys, memo) = spans[0], columns[0]
            # One block: the usual case, a slice of its matrix (rows: series).
            values = block.values.T[index, rows]
            chunk = SeriesChunk(name, labels, keys, times, values, None, events, memo)
            # Times and events are interned, so identity says "scraped together".
            if run and (run[-1][0].times is not times or run[-1][0].events is not events):
                flush()
            run.append((chunk, frame_micros, event_micros))
        flush()
        return found

    def _instance_spans(
        self, endpoints: Mapping[int, str], start: int, end: int
    ) -> list[_Instance]:
        """Each instance's frames and events in [start, end], in instance order; worked out
        once per span, as the specs of a page read a few spans many times."""
        key = (tuple(sorted(endpoints.items())), start, end)
        found = self._spans.get(key)
        if found is not None:
            return found
        by_instance: dict[str, list[int]] = {}
        for endpoint_id, instance in endpoints.items():
            by_instance.setdefault(instance, []).append(endpoint_id)
        found = self._spans[key] = []
        for instance in sorted(by_instance):
            ids = sorted(by_instance[instance])
            spans = []
            for endpoint_id in ids:
                for block in self._blocks[endpoint_id]:
                    rows = span_rows(block.at_micros, start, end)
                    if rows.start != rows.stop:
                        spans.append((endpoint_id, block, rows))
            if spans:
                micro, times, landing = in_scrape_order(spans)
                event_micros, events = self._events_between(ids, start, end)
                found.append(_Instance(spans, self._interned(times), landing,
                                       self._interned(events), micro, event_micros))  # fmt: skip
        return found

    def _interned(self, array: np.ndarray) -> np.ndarray:
        return self._arrays.setdefault(array.tobytes(), array)

    def _events_between(
        self, endpoint_ids: Sequence[int], start: int, end: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The events of these endpoints in [start, end], in time order: micros, seconds."""
        parts = []
        for endpoint_id in endpoint_ids:
            event_micro, event_times = self._events[endpoint_id]
            parts.append(
                (event_micro[(rows := span_rows(event_micro, start, end))], event_times[rows])
            )
        if len(parts) == 1:
            return parts[0]
        micro = np.concatenate([m for m, _ in parts])
        order = np.argsort(micro, kind="stable")
        return micro[order], np.concatenate([t for _, t in parts])[order]

    def _failed_between(self, endpoints: Mapping[int, str], start: int, end: int) -> dict[str, int]:
        key = ("failed", tuple(endpoints.items()), start, end)
        found = self._spans.get(key)
        if found is None:
            found = self._spans[key] = self._count_failed(endpoints, start, end)
        return dict(found)

    def _count_failed(self, endpoints: Mapping[int, str], start: int, end: int) -> dict[str, int]:
        failed: dict[str, int] = {}
        for endpoint_id, instance in endpoints.items():
            rows = span_rows(self._failed[endpoint_id], start, end)
            if count := rows.stop - rows.start:
                failed[instance] = failed.get(instance, 0) + count
        return failed

    @staticmethod
    def _series(
        name: str, labels: Mapping[str, str],
        found: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]],
        events: Mapping[int, np.ndarray],
    ) -> RawSeries:  # fmt: skip
        if len(found) == 1:  # the usual case: one endpoint, one layout, already in order
            owner, _, times, values = found[0]
            # `times` is this read's own copy (shared by the block's columns); never written.
            return RawSeries(name, labels, times, values.copy(), events[owner])
        owners = np.concatenate([np.full(len(m), e, dtype=np.int64) for e, m, _, _ in found])
        micro = np.concatenate([m for _, m, _, _ in found])
        times = np.concatenate([t for _, _, t, _ in found])
        values = np.concatenate([v for _, _, _, v in found]).astype(np.float64)
        # Scrape time first, then endpoint: one series spread over endpoints or layouts
        # reads in the order the scrapes happened.
        order = np.lexsort((owners, micro))
        owner = int(owners[order[0]])
        return RawSeries(name, labels, times[order], values[order], events[owner])


def store_read(
    *,
    endpoints: Mapping[int, str],
    names: frozenset[str],
    start: datetime,
    end: datetime,
    model_name: str | None = None,
    match: Sequence[tuple[str, str]] = (),
) -> StoreRead:
    """Every series named in `names` on `endpoints` (id -> instance) between start and end."""
    need = ReadNeed(endpoints, names, start, end)
    window = StoreWindow(endpoints=endpoints, names=names, start=start, end=end)
    return window.read(need, model_name=model_name, match=match)
