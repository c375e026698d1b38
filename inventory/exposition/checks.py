"""Semantic checks that flag a text-format family instead of rejecting the payload.

In the text format a histogram whose buckets are not cumulative still parses (the
format asks for cumulative buckets but Prometheus reads them anyway): the dashboard
shows "percentile unavailable: <problem>" for it. The same goes for counters with
negative or non-finite values. OpenMetrics makes these faults errors, so its parser
rejects them instead (see `inventory.exposition.openmetrics`). Messages quote label
values only as short, escaped excerpts.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Mapping, Sequence
from operator import attrgetter

from inventory.exposition.model import Sample, excerpt, parse_bound

MAX_PROBLEMS = 5
_INF = float("inf")

Key = frozenset[tuple[str, str]]


def family_problems(
    type_: str,
    raw: str,
    samples: Sequence[Sample],
    *,
    om: bool,
) -> tuple[str, ...]:
    if not samples:
        return ()
    if type_ == "histogram" or type_ == "gaugehistogram":
        bucket_name, count_name = _histogram_names(raw, type_)
        if _histogram_is_sound(samples, bucket_name, count_name):
            return ()
        found = _histogram_problems(samples, bucket_name, count_name)
    elif type_ == "counter":
        found = _counter_problems(samples, raw + "_total" if om else raw)
    elif type_ == "summary":
        found = _summary_problems(samples, raw)
    elif type_ == "info":
        found = [f"info value is not 1 in {series(s.labels)}" for s in samples if s.value != 1]
    elif type_ == "stateset":
        found = [
            f"stateset value is not 0 or 1 in {series(s.labels)}"
            for s in samples
            if s.value not in (0, 1)
        ]
    else:
        return ()
    return cap(found)


@functools.lru_cache(maxsize=4096)
def _histogram_names(raw: str, type_: str) -> tuple[str, str]:
    count = "_count" if type_ == "histogram" else "_gcount"
    return sys.intern(raw + "_bucket"), sys.intern(raw + count)


# A sample's series and timestamp: two samples with the same are one point listed twice.
# `labels._key` is the label set as a frozenset (the order of the labels is not kept).
series_point = attrgetter("name", "labels._key", "timestamp")


def has_repeats(samples: Sequence[Sample]) -> bool:
    """Whether some series is listed twice with the same timestamp (none, in a scrape).

    One pass in C over cached hashes: cheap next to the parse that built the samples."""
    return len(set(map(series_point, samples))) != len(samples)


def repeat_problem(sample: Sample, lines: Sequence[int]) -> str:
    """The problem of a series listed on several `lines` (1-based; the first is kept)."""
    name = sample.name if len(sample.name) <= 60 else sample.name[:59] + "…"
    *before, last = map(str, lines)
    return (
        f"series {name}{series(sample.labels)} is listed on lines {', '.join(before)} and "
        f"{last}: stored once, with the value of line {lines[0]} (Prometheus too keeps the first)"
    )


def series(labels: Iterable[tuple[str, str]] | Mapping[str, str]) -> str:
    """A short rendering of a label set for problem messages."""
    items = sorted(labels.items() if isinstance(labels, Mapping) else labels)
    text = "{" + ",".join(f"{k}={excerpt(v, 24)}" for k, v in items) + "}"
    return text if len(text) <= 120 else text[:119] + "…"


def cap(found: list[str]) -> tuple[str, ...]:
    if not found:
        return ()
    unique = list(dict.fromkeys(found))
    if len(unique) > MAX_PROBLEMS:
        extra = len(unique) - MAX_PROBLEMS + 1
        return (*unique[: MAX_PROBLEMS - 1], f"…and {extra} more problems")
    return tuple(unique)


def _counter_problems(samples: Sequence[Sample], total_name: str) -> list[str]:
    found = []
    for s in samples:
        v = s.value
        if s.name == total_name and not 0 <= v < _INF:
            kind = "NaN" if v != v else ("infinite" if v == _INF else "negative")
            found.append(f"{kind} counter value in {series(s.labels)}")
    return found


def _summary_problems(samples: Sequence[Sample], raw: str) -> list[str]:
    found = []
    count_name = raw + "_count"
    for s in samples:
        if s.name == raw:
            if not 0 <= parse_bound(s.labels.get("quantile")) <= 1:
                found.append(f"quantile label missing or outside [0, 1] in {series(s.labels)}")
        elif s.name == count_name and not s.value >= 0:
            found.append(f"negative or NaN count in {series(s.labels)}")
    return found


def _histogram_is_sound(samples: Sequence[Sample], bucket_name: str, count_name: str) -> bool:
    """One cheap pass that proves the usual layout has no problem; False means "look closer".

    The usual layout: each series' buckets contiguous with `le` increasing up to
    +Inf, counts never decreasing, and `_count` equal to the +Inf bucket. The
    parser's Labels carry the bucket's series key (shared by all buckets of a
    series) and its `le` as a float, so this pass is mostly attribute reads.
    """
    inf_values: dict[object, float] = {}
    group: object = None
    last_le = last_value = 0.0
    counts = []
    # Names are compared by identity: the parser interns every sample name, and
    # bucket_name/count_name come from the same interned table.
    try:
        for sample in samples:
            name = sample.name
            if name is bucket_name:
                labels = sample.labels
                key = labels._group  # type: ignore[attr-defined]  # set by the parser's label cache
                le = labels._le  # type: ignore[attr-defined]  # set by the parser's label cache
                value = sample.value
                if key is group:
                    if not (le > last_le and value >= last_value):
                        return False
                else:
                    if group is not None:
                        if last_le != _INF:
                            return False
                        inf_values[group] = last_value
                    if key in inf_values or not (value >= 0 and le == le):
                        return False
                    group = key
                last_le = le
                last_value = value
            elif name is count_name:
                counts.append((sample.labels._key, sample.value))  # type: ignore[attr-defined]  # see above
    except AttributeError:  # labels built outside the parser: take the careful path
        return False
    if group is not None:
        if last_le != _INF:
            return False
        inf_values[group] = last_value
    for key, value in counts:  # noqa: SIM110 - a plain loop: all() with a generator costs more
        if inf_values.get(key) != value:
            return False
    return True


def _histogram_problems(samples: Sequence[Sample], bucket_name: str, count_name: str) -> list[str]:
    groups: dict[Key, list[tuple[str | None, float]]] = {}
    counts: dict[Key, float] = {}
    for s in samples:
        labels = s.labels
        if s.name == bucket_name:
            key = frozenset(kv for kv in labels.items() if kv[0] != "le")
            groups.setdefault(key, []).append((labels.get("le"), s.value))
        elif s.name == count_name:
            counts[frozenset(labels.items())] = s.value
    found: list[str] = []
    for key, group in groups.items():
        _check_buckets(key, group, counts.pop(key, None), found)
    suffix = count_name[count_name.rindex("_") :]
    found.extend(f"{suffix} without buckets in {series(key)}" for key in counts)
    return found


def _check_buckets(
    key: Key, group: list[tuple[str | None, float]], count: float | None, found: list[str]
) -> None:
    bounds: list[tuple[float, float]] = []
    for le, value in group:
        bound = parse_bound(le)
        if bound != bound:
            what = "without an le label" if le is None else f"with le={excerpt(le, 24)}"
            found.append(f"bucket {what} (not a number) in {series(key)}")
            return
        bounds.append((bound, value))
    bounds.sort(key=lambda b: b[0])
    previous_bound: float | None = None
    previous_value = 0.0
    for bound, value in bounds:
        if bound == previous_bound:
            found.append(f"duplicate bucket le={bound:g} in {series(key)}")
            return
        if not value >= previous_value:
            what = "negative or NaN" if not value >= 0 else "decreasing (not cumulative)"
            found.append(f"bucket counts {what} at le={bound:g} in {series(key)}")
            return
        previous_bound, previous_value = bound, value
    if previous_bound != _INF:
        found.append(f"no +Inf bucket in {series(key)}")
    elif count is not None and count != previous_value:
        found.append(
            f"count {count:g} differs from the +Inf bucket {previous_value:g} in {series(key)}"
        )
