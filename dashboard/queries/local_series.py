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
decode each stored frame once rather than forty times.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from inventory.models import ScrapeRun, ScrapeStatus
from inventory.store import FrameBlock, frame_blocks, micros

LabelSet = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class RawSeries:
    name: str
    labels: Mapping[str, str]  # including `instance`
    times: np.ndarray  # unix seconds, ascending
    values: np.ndarray
    events: np.ndarray  # the endpoint's scrape times (stored or failed), ascending


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


# A column of a block: its index, its labels as stored (without `instance`), and its key
# (sorted, with `instance`). Plain tuples: a window holds thousands, and every object that
# lives through a render adds to what the garbage collector walks.
_Column = tuple[int, Mapping[str, str], LabelSet]


class _Block:
    """A FrameBlock with its columns indexed by sample name, label keys built once."""

    def __init__(
        self, block: FrameBlock, instance: str,
        sorted_labels: dict[int, tuple[Mapping[str, str], LabelSet]],
    ) -> None:  # fmt: skip
        self.at_micros = block.at_micros
        self.at = block.at
        self.values = block.values
        self.by_name: dict[str, list[_Column]] = {}
        mine = ("instance", instance)
        for index, (name, labels) in enumerate(block.series):
            if "instance" in labels:
                key = tuple(sorted({**labels, "instance": instance}.items()))
            else:
                # Every endpoint with one layout shares its decoded label dicts (layouts
                # are cached by digest): sort each once per window, then slot `instance`
                # in where sorting would put it (label names are unique, so this is sorted).
                found = sorted_labels.get(id(labels))
                if found is None:  # kept with its dict, so the id stays that dict's
                    found = sorted_labels[id(labels)] = (labels, tuple(sorted(labels.items())))
                base = found[1]
                at = bisect_left(base, ("instance",))
                key = (*base[:at], mine, *base[at:])
            self.by_name.setdefault(name, []).append((index, labels, key))


def _span(micro: np.ndarray, start: int, end: int) -> slice:
    return slice(
        int(np.searchsorted(micro, start, side="left")),
        int(np.searchsorted(micro, end, side="right")),
    )


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
        ids = list(self.endpoints)
        self._blocks: dict[int, list[_Block]] = {endpoint_id: [] for endpoint_id in ids}
        event_micros: dict[int, list[np.ndarray]] = {endpoint_id: [] for endpoint_id in ids}
        event_times: dict[int, list[np.ndarray]] = {endpoint_id: [] for endpoint_id in ids}
        sorted_labels: dict[int, tuple[Mapping[str, str], LabelSet]] = {}
        for block in frame_blocks(endpoint_ids=ids, start=start, end=end, names=names):
            instance = self.endpoints[block.endpoint_id]
            self._blocks[block.endpoint_id].append(_Block(block, instance, sorted_labels))
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

    def read(
        self, need: ReadNeed, *, model_name: str | None = None,
        match: Sequence[tuple[str, str]] = (),
    ) -> StoreRead:  # fmt: skip
        """Every series named in `need` on its endpoints within its span, as if read alone."""
        if not self.covers(need):
            # Only a caller that planned its reads wrongly gets here: answer correctly anyway.
            return StoreWindow(
                endpoints=need.endpoints, names=need.names, start=need.start, end=need.end
            ).read(need, model_name=model_name, match=match)
        keep = _label_filter(model_name, match)
        start, end = micros(need.start), micros(need.end)
        # (name, labels) -> pieces of (endpoint id, micros, times, values), one per block.
        pieces: dict[tuple[str, LabelSet], list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]]
        pieces = {}
        for endpoint_id in need.endpoints:
            for block in self._blocks[endpoint_id]:
                rows = _span(block.at_micros, start, end)
                if rows.start == rows.stop:
                    continue
                # One copy of the block's times for all its columns: the series of one
                # endpoint then share a `times` array, which the evaluator batches on.
                micro, times = block.at_micros[rows], block.at[rows].copy()
                for name in need.names:
                    for index, labels, key in block.by_name.get(name, ()):
                        if keep is None or keep(labels):
                            pieces.setdefault((name, key), []).append(
                                (endpoint_id, micro, times, block.values[rows, index])
                            )
        # Each endpoint's events in the span, sliced once rather than once per series.
        events = {}
        for endpoint_id in need.endpoints:
            event_micro, event_times = self._events[endpoint_id]
            events[endpoint_id] = event_times[_span(event_micro, start, end)]
        # One labels dict per key for the whole window: series only ever read them.
        dicts = self._label_dicts
        series = tuple(
            self._series(
                name, dicts.get(key) or dicts.setdefault(key, dict(key)), pieces[(name, key)],
                events,
            )
            for name, key in sorted(pieces)
        )  # fmt: skip
        failed: dict[str, int] = {}
        for endpoint_id, instance in need.endpoints.items():
            rows = _span(self._failed[endpoint_id], start, end)
            if count := rows.stop - rows.start:
                failed[instance] = failed.get(instance, 0) + count
        return StoreRead(series, failed)

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
