"""Each selector against what the fleet really exposes: which endpoints should expose it
(the catalog's source kind), which do (the inventory's families, and the label values of
each endpoint's newest layout), the verdict, why, since when, and the current name.

    verdicts = check_selectors(fleet, selectors, prometheus_names=seen, recorded_names=rules)

The fleet's inventories and layouts are read once per call, and identical checks are
answered once per distinct layout, so thousands of selectors against dozens of replicas
take a fraction of a second."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from blindspots.history import NEVER, since_of
from blindspots.prometheus import HELD_DAYS
from blindspots.types import Matcher, Selector, SelectorVerdict, Verdict
from inventory.catalog import CATALOG, CatalogEntry, entries_for_name
from inventory.models import Endpoint, Fleet
from inventory.selectors import ScopedEndpoint, scope_endpoints
from inventory.store import LayoutRun, Series, current_layouts, layout_runs
from queries import ENDPOINT_KIND_FOR_SOURCE

__all__ = ["check_selectors", "metric_spellings", "wildcard"]

HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")
# Functions that only make sense over a counter (or a histogram's cumulative parts).
COUNTER_FUNCTIONS = frozenset({"rate", "increase", "irate", "resets"})
# Families a counter function may read.
MONOTONIC_TYPES = frozenset({"counter", "histogram", "summary", "untyped", "unknown", ""})
KIND_NOUN = {"engine": "replicas"}


@dataclass(frozen=True)
class _Named:
    """What the selector's metric name is, as the catalog and the exposition know it."""

    spellings: frozenset[str]  # sample names it may be exposed as
    families: frozenset[str]  # inventory family names it belongs to
    entries: tuple[CatalogEntry, ...]
    part: str  # "_bucket", "_sum", "_count" or ""


def metric_spellings(metric: str) -> _Named:
    """The sample and family names a selector's metric may be exposed under: counters with
    and without `_total`, a histogram's parts under the histogram's family."""
    entries = entries_for_name(metric)
    part = ""
    base = metric
    if not entries:
        for suffix in HISTOGRAM_PARTS:
            stripped = metric.removesuffix(suffix)
            if stripped != metric:
                found = [
                    e for e in entries_for_name(stripped) if e.type in ("histogram", "summary")
                ]
                if found:
                    entries, part, base = tuple(found), suffix, stripped
                    break
    spellings = {metric}
    families = {metric}
    if metric.endswith("_total"):
        spellings.add(metric.removesuffix("_total"))
        families.add(metric.removesuffix("_total"))
    elif not part:
        spellings.add(metric + "_total")
    for suffix in HISTOGRAM_PARTS:
        if metric.endswith(suffix):
            families.add(metric.removesuffix(suffix))
    if part:
        families.add(base)
    return _Named(frozenset(spellings), frozenset(families), entries, part)


@cache
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _matches(matcher: Matcher, value: str) -> bool:
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    pattern = _regex(matcher.value)
    found = pattern is not None and pattern.fullmatch(value) is not None
    return found if matcher.op == "=~" else not found


def wildcard(matcher: Matcher) -> bool:
    """A matcher that every value, the empty one included, satisfies (`=~".*"`)."""
    if matcher.op != "=~":
        return False
    return all(_matches(matcher, v) for v in ("", "x", "some-value", "0.5"))


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _le_equal(matcher: Matcher, value: str) -> bool:
    """`le="2"` against "2.0": equal as numbers (Prometheus compares the strings)."""
    want, have = _float(matcher.value), _float(value)
    return want == have


@dataclass
class _Endpoint:
    scoped: ScopedEndpoint
    labels: Mapping[str, str]  # target labels Prometheus adds: job, instance, pod, ...
    layout: Sequence[Series] | None
    by_name: dict[str, list[Mapping[str, str]]]


class _Fleet:
    """The fleet's endpoints read once: inventories, target labels, newest layouts."""

    def __init__(self, fleet: Fleet) -> None:
        scoped = scope_endpoints(fleet=fleet)
        ids = [e.endpoint_id for e in scoped]
        labels = dict(Endpoint.objects.filter(pk__in=ids).values_list("pk", "labels"))
        layouts = current_layouts(endpoint_ids=ids)
        indexes: dict[int, dict[str, list[Mapping[str, str]]]] = {}
        self.endpoints: list[_Endpoint] = []
        # Names Prometheus held lately, stale or not (check_selectors sets them).
        self.held: frozenset[str] = frozenset()
        for e in scoped:
            layout = layouts.get(e.endpoint_id)
            index: dict[str, list[Mapping[str, str]]] = {}
            if layout is not None:
                index = indexes.get(id(layout)) or {}
                if not index:
                    for name, series_labels in layout:
                        index.setdefault(name, []).append(series_labels)
                    indexes[id(layout)] = index
            target = {str(k): str(v) for k, v in (labels.get(e.endpoint_id) or {}).items()}
            target["instance"] = e.instance
            self.endpoints.append(_Endpoint(e, target, layout, index))
        self.runs: dict[int, list[LayoutRun]] | None = None
        self.indexes = indexes
        self.history_memo: dict[Any, bool] = {}
        self.known: list[str] | None = None
        self.keys: dict[tuple[Any, ...], int] = {}
        self.dialects: dict[int, str] = {}
        # (id(layout) or id(families), selector key) -> (ok, reason, le-only endpoints)
        self.memo: dict[Any, tuple[bool, str, bool]] = {}
        self.exposed: frozenset[str] = frozenset(
            name for e in self.endpoints for name in (*e.scoped.families, *e.by_name)
        )

    def key_id(self, *key: Any) -> int:
        """A small number for a selector's key: memo keys hash it instead of the matchers."""
        return self.keys.setdefault(key, len(self.keys))

    def index(self, series: Sequence[Series]) -> dict[str, list[Mapping[str, str]]]:
        """The series of a layout by name, built once per layout per call."""
        index = self.indexes.get(id(series))
        if index is None:
            index = self.indexes[id(series)] = {}
            for name, labels in series:
                index.setdefault(name, []).append(labels)
        return index

    def layout_history(self) -> dict[int, list[LayoutRun]]:
        if self.runs is None:
            ids = [e.scoped.endpoint_id for e in self.endpoints]
            self.runs = layout_runs(endpoint_ids=ids)
        return self.runs


def _series_ok(
    matchers: Sequence[Matcher], labels: Mapping[str, str], target: Mapping[str, str]
) -> bool:
    for m in matchers:
        value = labels.get(m.label)
        if value is None:
            value = target.get(m.label, "")
        if not _matches(m, value):
            return False
    return True


def _check_endpoint(
    endpoint: _Endpoint, selector: Selector, named: _Named, label_matchers: tuple[Matcher, ...]
) -> tuple[bool, str, bool]:
    """(matches, why not, matches only with another spelling of an `le` value)."""
    families = endpoint.scoped.families
    family_name = next((f for f in named.families if f in families), None)
    name_matchers = [m for m in selector.matchers if m.label == "__name__"]
    if selector.metric is None:
        names = [n for n in endpoint.by_name or families if _name_ok(name_matchers, n)]
        if not names:
            return False, "no series name matches", False
    elif family_name is None:
        return False, "not exposed", False
    family: Mapping[str, Any] = families.get(family_name or "", {}) if family_name else {}
    kind = str(family.get("type", ""))
    if selector.needs_le and kind not in ("histogram", "") and selector.metric is not None:
        return False, f"a {kind}, not a histogram: histogram_quantile needs le", False
    if selector.needs_le and selector.metric is not None and named.part not in ("_bucket", ""):
        return False, f"{selector.metric} has no le label: histogram_quantile needs _bucket", False
    counted = selector.functions[:1] and selector.functions[0] in COUNTER_FUNCTIONS
    if counted and kind not in MONOTONIC_TYPES:
        return True, f"a {kind}: {selector.functions[0]}() needs a counter", False
    if endpoint.layout is None:
        # No frame to read label values from: judge by label names only.
        have = set(family.get("label_names") or ()) | set(endpoint.labels) | {"le"}
        for m in label_matchers:
            if m.label not in have and not _matches(m, ""):
                return False, f"no {m.label} label", False
        return True, "", False
    if selector.metric is None:
        names = [n for n in endpoint.by_name if _name_ok(name_matchers, n)]
    else:
        names = [n for n in named.spellings if n in endpoint.by_name]
    series = [labels for n in names for labels in endpoint.by_name[n]]
    if not series:
        return False, "not exposed", False
    if any(_series_ok(label_matchers, labels, endpoint.labels) for labels in series):
        return True, "", False
    # Why not: a label it lacks, a value it never takes, or an le spelled otherwise.
    le = [m for m in label_matchers if m.label == "le" and m.op == "="]
    if le:
        rest = [m for m in label_matchers if not (m.label == "le" and m.op == "=")]
        for labels in series:
            if _series_ok(rest, labels, endpoint.labels) and all(
                _le_equal(m, labels.get("le", "")) for m in le
            ):
                return False, f'writes le="{labels.get("le")}"', True
    for m in label_matchers:
        present = [labels for labels in series if m.label in labels]
        if not present and m.label not in endpoint.labels and not _matches(m, ""):
            return False, f"no {m.label} label", False
        values = {labels.get(m.label, endpoint.labels.get(m.label, "")) for labels in series}
        if not any(_matches(m, v) for v in values):
            shown = ", ".join(sorted(values)[:3])
            return False, f"{m.label} is {shown}, never {m.op}{m.value!r}", False
    return False, "no series with every label matching", False


def _exposes_name(endpoint: _Endpoint, selector: Selector, named: _Named) -> bool:
    """Whether the endpoint has a family or series of the selector's name (labels aside)."""
    if selector.metric is not None:
        families = endpoint.scoped.families
        return any(f in families for f in named.families) or any(
            n in endpoint.by_name for n in named.spellings
        )
    by_name = [m for m in selector.matchers if m.label == "__name__"]
    return any(_name_ok(by_name, n) for n in (*endpoint.by_name, *endpoint.scoped.families))


def _name_ok(matchers: Sequence[Matcher], name: str) -> bool:
    return all(_matches(m, name) for m in matchers)


def _removed_text(metric: str, entry: CatalogEntry, current: str | None) -> str:
    """ "vllm:gpu_cache_usage_perc was renamed in 0.9.2, hidden from 0.11 (gone since
    2025-11-25 (#29330); renamed vllm:kv_cache_usage_perc)"."""
    named = metric_spellings(metric)
    names = named.families | named.spellings
    spelled = next((n for n in entry.names if n.name in names), None)
    if spelled is None or spelled.until is None:
        return ""
    change = spelled.change or "removed"
    if not change.startswith(("renamed", "removed", "replaced")):
        change = f"removed ({change})"
    facts = [f"gone since {spelled.until}"]
    if current:
        facts.append(f"renamed {current}")
    elif spelled.note:
        facts.append(spelled.note)
    return f"{spelled.name} was {change} ({'; '.join(facts)})"


def _replacement(metric: str, named: _Named) -> str | None:
    for entry in named.entries:
        current = entry.current
        if current is None or entry.source_kind not in ("engine", "http", "router"):
            continue
        if any(n.name in named.families | named.spellings for n in entry.names[:1]):
            return None  # already the current name
        return current.name + named.part
    return None


def _suggest(metric: str, fleet: _Fleet) -> str:
    if fleet.known is None:
        names = set(fleet.exposed) | {n.name for e in CATALOG.values() for n in e.names}
        fleet.known = sorted(names)
    close = difflib.get_close_matches(metric, fleet.known, n=1, cutoff=0.85)
    return f"; did you mean {close[0]}?" if close else ""


def check_selectors(
    fleet: Fleet,
    selectors: Sequence[Selector],
    *,
    prometheus_names: Collection[str] | None = None,
    recorded_names: Collection[str] | None = None,
    prometheus_held_names: Collection[str] | None = None,
) -> list[SelectorVerdict]:
    """The verdict of each selector against the fleet's endpoints, in order.

    `prometheus_names`: names Prometheus has seen recently; `recorded_names`: the outputs
    of recording rules. Either counts as exposure for a name no endpoint exposes (a
    recorded `job:...` series, a metric of a target FleetScope does not scrape): such a
    selector is live, with the reason saying where it comes from. `prometheus_held_names`:
    names Prometheus held lately, stale ones too; such a name without a recent sample is
    blind (its series stopped), not never matched."""
    state = _Fleet(fleet)
    seen = frozenset(prometheus_names or ())
    recorded = frozenset(recorded_names or ())
    state.held = frozenset(prometheus_held_names or ())
    found: dict[tuple[Any, ...], SelectorVerdict] = {}
    verdicts = []
    for selector in selectors:
        # The same selector in many panels and rules is judged once.
        key = (selector.metric, selector.matchers, selector.functions)
        verdict = found.get(key)
        if verdict is None:
            verdict = found[key] = _verdict(state, selector, seen, recorded)
        verdicts.append(
            verdict if verdict.selector is selector else replace(verdict, selector=selector)
        )
    return verdicts


def _verdict(
    state: _Fleet, selector: Selector, seen: frozenset[str], recorded: frozenset[str]
) -> SelectorVerdict:
    metric = selector.metric
    named = metric_spellings(metric) if metric else _Named(frozenset(), frozenset(), (), "")
    label_matchers = tuple(m for m in selector.matchers if m.label != "__name__")
    kinds = {ENDPOINT_KIND_FOR_SOURCE[e.source_kind] for e in named.entries}
    if metric is None:  # a `__name__` matcher: the kinds of the names it matches
        by_name = [m for m in selector.matchers if m.label == "__name__"]
        kinds = {
            ENDPOINT_KIND_FOR_SOURCE[e.source_kind]
            for name in state.exposed
            if _name_ok(by_name, name)
            for e in entries_for_name(name)
        }
    endpoints = state.endpoints
    if not kinds:
        # A name the catalog does not know: the kinds of the endpoints that expose it are
        # the ones that should (every endpoint when none does).
        kinds = {e.scoped.kind for e in endpoints if _exposes_name(e, selector, named)}
    expected = [e for e in endpoints if not kinds or e.scoped.kind in kinds]
    key = state.key_id(selector.metric, selector.matchers, selector.functions)
    results: dict[str, tuple[bool, str, bool]] = {}
    for endpoint in endpoints:
        memo_key = (id(endpoint.layout) if endpoint.layout is not None else -1,
                    id(endpoint.scoped.families), key)  # fmt: skip
        found = state.memo.get(memo_key)
        if found is None or any(m.label in endpoint.labels for m in label_matchers):
            found = _check_endpoint(endpoint, selector, named, label_matchers)
            state.memo[memo_key] = found
        results[endpoint.scoped.instance] = found
    matching = tuple(sorted(i for i, (ok, _, _) in results.items() if ok))
    expected_names = tuple(sorted(e.scoped.instance for e in expected))
    hits = [i for i in expected_names if results[i][0]]
    missing = [i for i in expected_names if not results[i][0]]
    kind_word = "/".join(sorted(kinds)) if kinds else "scraped"
    noun = KIND_NOUN.get(kind_word, "endpoints")
    shown = metric or selector.text
    replacement = _replacement(metric, named) if metric else None
    entry = named.entries[0] if named.entries else None
    current = entry.current.name if entry and entry.current and replacement else None
    facts = _removed_text(metric, entry, current) if metric and entry else ""
    base = SelectorVerdict(selector, "live", "", expected_names, matching)

    if not matching and not named.entries:
        outside = metric is not None and named.spellings & (seen | recorded)
        if outside:
            where = "recorded by a rule" if named.spellings & recorded else "seen by Prometheus"
            why = f"{shown} is not scraped from an endpoint of this fleet but is {where}"
            return replace(base, why=why)
        if metric is not None and named.spellings & state.held:
            why = (
                f"{shown} is not scraped from an endpoint of this fleet and Prometheus has "
                f"no sample of it in the last 5 minutes, but held it within the last "
                f"{HELD_DAYS} days: whatever wrote it stopped, or renamed it"
            )
            return replace(base, verdict="blind", why=why)
        if selector.metric is None or not (named.spellings & state.exposed):
            why = (
                f"{shown} is in no catalog entry and no endpoint exposes it: a typo, or a "
                f"metric of something else{_suggest(metric, state) if metric else ''}"
            )
            return replace(base, verdict="never matched", why=why, since_text=NEVER)
    if not expected:
        why = f"{shown} needs a {kind_word} endpoint and this fleet has none"
        return replace(base, verdict="blind", why=why, replacement=replacement)

    le_only = [i for i in expected_names if results[i][2]]
    verdict: Verdict
    if not missing:
        verdict, why = "live", f"exposed by all {len(expected_names)} {kind_word} {noun}"
        wild = [m for m in label_matchers if m.from_variable and wildcard(m)]
        odd = {results[i][1] for i in hits if results[i][1]}
        if wild:
            named_vars = ", ".join(f'{m.label}{m.op}"{m.value}"' for m in wild)
            verdict = "suspicious"
            why = (
                f"matches only because {named_vars} came from a template variable that became "
                f"a wildcard; {why}"
            )
        elif odd:
            verdict, why = "suspicious", f"{shown} is {'; '.join(sorted(odd))}; {why}"
    elif hits and le_only and len(hits) + len(le_only) == len(expected_names):
        le = next(m for m in label_matchers if m.label == "le" and m.op == "=")
        spelled = "; ".join(f"{i} {results[i][1]}" for i in le_only)
        verdict = "suspicious"
        why = (
            f'le="{le.value}" matches only {len(hits)} of {len(expected_names)} {noun} '
            f"({', '.join(hits)}): {spelled}, and Prometheus compares le values as strings"
        )
    else:
        grouped: dict[str, list[str]] = {}
        for i in missing:
            grouped.setdefault(results[i][1], []).append(i)
        reasons = "; ".join(f"{', '.join(insts)}: {why}" for why, insts in grouped.items())
        if hits:
            verdict = "partly blind"
            why = (
                f"exposed by {len(hits)} of {len(expected_names)} {kind_word} {noun}; "
                f"missing on {reasons}"
            )
        else:
            verdict = "blind"
            why = f"no {kind_word} endpoint exposes a matching series ({reasons})"
            if le_only:
                le = next(m for m in label_matchers if m.label == "le" and m.op == "=")
                why += f'; le="{le.value}" is compared as a string by Prometheus'
        if facts:
            why = f"{facts}; {why}"
        elif replacement:
            why = f"{shown} is an old name (now {replacement}); {why}"
    result = replace(base, verdict=verdict, why=why, replacement=replacement)
    if verdict in ("blind", "partly blind"):
        result = _with_since(state, result, named, label_matchers, missing, noun)
    return result


def _with_since(
    state: _Fleet,
    verdict: SelectorVerdict,
    named: _Named,
    label_matchers: tuple[Matcher, ...],
    missing: Sequence[str],
    noun: str,
) -> SelectorVerdict:
    by_instance = {e.scoped.instance: e for e in state.endpoints}
    instances = {by_instance[i].scoped.endpoint_id: i for i in missing}
    labels = {e.scoped.endpoint_id: e.labels for e in state.endpoints}
    selector = verdict.selector
    name_matchers = [m for m in selector.matchers if m.label == "__name__"]
    targeted = any(m.label in labels[i] for i in instances for m in label_matchers)
    key = state.key_id(selector.metric, selector.matchers)

    def matches(endpoint_id: int, series: Sequence[Series]) -> bool:
        memo_key = (id(series), key, endpoint_id if targeted else None)
        found = state.history_memo.get(memo_key)
        if found is None:
            index = state.index(series)
            if selector.metric is not None:
                names = [n for n in named.spellings if n in index]
            else:
                names = [n for n in index if _name_ok(name_matchers, n)]
            found = state.history_memo[memo_key] = any(
                _series_ok(label_matchers, series_labels, labels[endpoint_id])
                for name in names
                for series_labels in index[name]
            )
        return found

    since = since_of(instances, state.layout_history(), matches, noun=noun, dialects=state.dialects)
    return replace(verdict, since=since.since, since_text=since.text)
