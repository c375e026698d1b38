"""Raw series out of the embedded store, identified the way Prometheus identifies them.

A series is a sample name plus its labels plus `instance` (the endpoint's
host:port, which Prometheus adds from the target and the store does not keep).
Next to each series' samples this keeps its endpoint's *events*: every stored
scrape and every failed one. Prometheus writes a stale marker when a series
is missing from a scrape or the scrape fails; an event without the series
plays that part here, so a replica that stopped answering drops out at once
instead of lingering for the 5-minute lookback (and never turns into a zero).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from inventory.models import ScrapeRun, ScrapeStatus
from inventory.store import frames_in_window

LabelSet = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
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


def _label_filter(
    model_name: str | None, match: Sequence[tuple[str, str]]
) -> Callable[[Mapping[str, str]], bool]:
    wanted = dict(match)
    if model_name is not None:
        wanted["model_name"] = model_name

    def keep(labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in wanted.items())

    return keep


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
    keep = _label_filter(model_name, match)
    # Per decoded layout (frames of one series set share the object): positions we want.
    picks: dict[int, list[tuple[int, str, LabelSet]]] = {}
    samples: dict[tuple[str, LabelSet], tuple[int, list[float], list[float]]] = {}
    events: dict[int, list[float]] = {endpoint_id: [] for endpoint_id in endpoints}
    for frame in frames_in_window(endpoint_ids=list(endpoints), start=start, end=end):
        at = frame.at.timestamp()
        events[frame.endpoint_id].append(at)
        layout_picks = picks.get(id(frame.layout))
        if layout_picks is None:
            instance = endpoints[frame.endpoint_id]
            layout_picks = picks[id(frame.layout)] = [
                (i, name, tuple(sorted({**labels, "instance": instance}.items())))
                for i, (name, labels) in enumerate(frame.layout)
                if name in names and keep(labels)
            ]
        for index, name, labels in layout_picks:
            _, times, values = samples.setdefault((name, labels), (frame.endpoint_id, [], []))
            times.append(at)
            values.append(frame.values[index])
    failed = ScrapeRun.objects.filter(
        endpoint_id__in=list(endpoints),
        status=ScrapeStatus.FAILED,
        started_at__gte=start,
        started_at__lte=end,
    ).values_list("endpoint_id", "started_at")
    failed_count: dict[str, int] = {}
    for endpoint_id, started_at in failed:
        events[endpoint_id].append(started_at.timestamp())
        instance = endpoints[endpoint_id]
        failed_count[instance] = failed_count.get(instance, 0) + 1
    event_arrays = {k: np.array(sorted(v), dtype=float) for k, v in events.items()}
    series = tuple(
        RawSeries(
            name,
            dict(labels),
            np.array(times, dtype=float),
            np.array(values, dtype=float),
            event_arrays[endpoint_id],
        )
        for (name, labels), (endpoint_id, times, values) in sorted(samples.items())
    )
    return StoreRead(series, failed_count)
