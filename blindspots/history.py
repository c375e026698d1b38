"""Since when a selector stopped matching: from the layouts FleetScope stored for each
endpoint (`inventory.store.layout_runs`), the first frame of the first layout without a
matching series after the last layout with one, per endpoint, and the dialect each layout
speaks, so the text can say "when they were upgraded to current vLLM"."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from inventory.catalog import detect_dialect
from inventory.store import LayoutRun, Series

NEVER = "never exposed while FleetScope watched"
# Oldest first: a move up this list is an upgrade, down it a rollback.
DIALECT_ORDER = ("v0", "v1-0.8", "v1-0.10", "current")
DIALECT_TEXT = {
    "v0": "the V0 engine",
    "v1-0.8": "vLLM 0.8 (early V1)",
    "v1-0.10": "vLLM 0.10",
    "current": "current vLLM",
}
HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")


@dataclass(frozen=True)
class Stop:
    """One endpoint that exposed a matching series and no longer does."""

    instance: str
    at: datetime  # the first frame of the first layout without it
    before: str  # the dialect of the last layout with it
    after: str  # the dialect of the layout without it


@dataclass(frozen=True)
class Since:
    since: datetime | None  # the last stop across endpoints
    text: str
    stops: tuple[Stop, ...]
    never: tuple[str, ...]  # instances that never exposed it while watched


@dataclass(frozen=True)
class _Family:
    """Just enough of a parsed family for `detect_dialect`, rebuilt from a stored layout."""

    name: str
    type: str
    help: str
    samples: tuple[_Sample, ...]


@dataclass(frozen=True)
class _Sample:
    name: str
    labels: Mapping[str, str]
    value: float = 0.0


def layout_dialect(series: Sequence[Series]) -> str:
    """The vLLM dialect a stored layout speaks, from its series names and labels (stored
    layouts keep no TYPE or HELP: counters are told by `_total`, histograms by `_bucket`)."""
    names = {name for name, _ in series}
    bases = {n.removesuffix("_bucket") for n in names if n.endswith("_bucket")}
    grouped: dict[tuple[str, str], list[_Sample]] = {}
    for name, labels in series:
        family, kind = name, "gauge"
        for part in HISTOGRAM_PARTS:
            if name.endswith(part) and name.removesuffix(part) in bases:
                family, kind = name.removesuffix(part), "histogram"
                break
        else:
            if name.endswith("_total"):
                family, kind = name.removesuffix("_total"), "counter"
        grouped.setdefault((family, kind), []).append(_Sample(name, labels))
    families = [_Family(name, kind, "", tuple(s)) for (name, kind), s in grouped.items()]
    return detect_dialect(families).dialect


def change_words(before: str, after: str) -> str:
    """ "when they were upgraded to current vLLM", or "when their metrics changed"."""
    if before in DIALECT_ORDER and after in DIALECT_ORDER and before != after:
        verb = (
            "upgraded"
            if DIALECT_ORDER.index(after) > DIALECT_ORDER.index(before)
            else ("rolled back")
        )
        return f"when {{they}} {{were}} {verb} to {DIALECT_TEXT[after]}"
    return "when {their} metrics changed"


def at_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def since_of(
    instances: Mapping[int, str],
    runs: Mapping[int, Sequence[LayoutRun]],
    matches: Callable[[int, Sequence[Series]], bool],
    *,
    noun: str = "replicas",
    dialects: dict[int, str] | None = None,
) -> Since:
    """When the endpoints `instances` (endpoint id -> instance) stopped matching: `matches`
    tells whether a layout of an endpoint holds a matching series; `dialects` is a memo of
    layout dialects by series-set id, shared across calls."""
    dialects = {} if dialects is None else dialects

    def dialect(run: LayoutRun) -> str:
        found = dialects.get(run.series_set_id)
        if found is None:
            found = dialects[run.series_set_id] = layout_dialect(run.series)
        return found

    stops: list[Stop] = []
    never: list[str] = []
    for endpoint_id, instance in sorted(instances.items(), key=lambda item: item[1]):
        history = runs.get(endpoint_id, ())
        last = max(
            (i for i, run in enumerate(history) if matches(endpoint_id, run.series)), default=None
        )
        if last is None:
            never.append(instance)
        elif last + 1 < len(history):
            gone = history[last + 1]
            stops.append(Stop(instance, gone.first_at, dialect(history[last]), dialect(gone)))
        # else: it still matches in its newest layout (the inventory may lag): no stop.
    return Since(
        max((s.at for s in stops), default=None),
        since_text(stops, never, len(instances), noun),
        tuple(stops),
        tuple(never),
    )


def since_text(stops: Sequence[Stop], never: Sequence[str], total: int, noun: str) -> str:
    """ "2 of 2 replicas stopped exposing it at 2026-11-18 11:02:45 UTC when they were
    upgraded to current vLLM", with those that never exposed it named after."""
    parts = []
    if stops:
        last = max(s.at for s in stops)
        one = len(stops) == 1
        changes = {change_words(s.before, s.after) for s in stops}
        words = changes.pop() if len(changes) == 1 else "when {their} metrics changed"
        words = words.format(
            they="it" if one else "they",
            were="was" if one else "were",
            their="its" if one else "their",
        )
        named = "" if len(stops) == total else f" ({', '.join(s.instance for s in stops)})"
        head = f"{len(stops)} of {total} {noun}{named} stopped exposing it"
        when = (
            f"at {at_text(last)}"
            if one or len({s.at for s in stops}) == 1
            else (f"by {at_text(last)}")
        )
        parts.append(f"{head} {when} {words}")
    if never:
        if not stops:
            return NEVER
        parts.append(f"{len(never)} ({', '.join(never)}) {NEVER}")
    return "; ".join(parts) if parts else ""
