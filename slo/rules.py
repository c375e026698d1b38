"""Prometheus rules for a fleet's SLOs: recording rules for the bad-event ratio and the event
count of every objective over every burn window, and the multi-window burn-rate alerts of
`slo.burn_policy` on top of them, so Prometheus pages on the same numbers the page shows.

Each rule reads the metric names the inventory resolved replica by replica: a fleet
mid-upgrade reads each name on its own instances and joins them with `or`, as the
dashboard's compiled queries do (`queries.promql.compile`). Every value that came from the
database is quoted by the `queries.promql` helpers, never pasted into the text. Rules name
the instances they read, so export again after replicas join or leave the fleet.

    print(slo_rules_yaml(fleet, dashboard_base_url="https://fleetscope.example.com"))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from inventory.models import Fleet
from queries import NameGroup, QueryResult, ResolvedKey, Scope, resolve_key
from queries.promql import any_of_regex, duration, go_float, le_matcher, matcher, selector
from slo.burn_policy import (
    PAIRS,
    SLOW_PAIR,
    SLOW_WINDOW_SECONDS,
    WINDOWS_SECONDS,
    BurnPair,
    label,
)
from slo.models import Objective, Slo
from slo.objectives import OBJECTIVE_KINDS, ObjectiveKindInfo

BAD_RATIO = "fleetscope_slo:bad_ratio:rate"
EVENTS = "fleetscope_slo:events:increase"
BURN_ALERT = "FleetscopeSloBurnRate"
SLOW_ALERT = "FleetscopeSloSlowBurn"
# `for:` only rides out one odd evaluation (a scrape gap, a replica restarting): each pair's
# short window already proves the burn is still going on. A page holds 2m, about 3% of the
# fast pair's hour; a ticket is read in working hours, so 15m of confirmation costs nothing.
FOR = {"page": "2m", "ticket": "15m"}
# The slow rule may read a window no pair does: record it too.
RECORDED_WINDOWS = tuple(sorted({*WINDOWS_SECONDS, SLOW_WINDOW_SECONDS}))


@dataclass(frozen=True)
class SloRules:
    """The rule groups (one per SLO with at least one usable objective) and what the
    operator must know about them: objectives left out, thresholds moved to a bucket edge,
    replicas not covered. Notes cannot live in the YAML (rules carry no comments)."""

    groups: tuple[dict[str, Any], ...]
    notes: tuple[str, ...]

    def yaml(self) -> str:
        return yaml.dump(
            {"groups": list(self.groups)},
            Dumper=_RulesDumper,
            sort_keys=False,
            allow_unicode=True,
            width=100,
        )


class _RulesDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line PromQL as a literal block, as rule files are
    written by hand; a quoted one-line string with `\\n` escapes is unreadable in review."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_RulesDumper.add_representer(str, _represent_str)


def slo_rules_yaml(fleet: Fleet, *, dashboard_base_url: str) -> str:
    """The Prometheus rule file for every SLO of `fleet` (`groups:` with one group each)."""
    return slo_rules(fleet, dashboard_base_url=dashboard_base_url).yaml()


def slo_rules(fleet: Fleet, *, dashboard_base_url: str) -> SloRules:
    groups: list[dict[str, Any]] = []
    notes: list[str] = []
    slos = (
        Slo.objects.filter(fleet=fleet)
        .select_related("fleet")
        .prefetch_related("objectives")
        .order_by("slug")
    )
    for slo in slos:
        rules: list[dict[str, Any]] = []
        for objective in slo.objectives.all():
            found = _objective_rules(slo, objective, dashboard_base_url)
            rules.extend(found.rules)
            notes.extend(f"{slo}: {note}" for note in found.notes)
        if rules:
            groups.append({"name": f"fleetscope-slo-{fleet.slug}-{slo.slug}", "rules": rules})
        else:
            notes.append(f"{slo}: no objective could be written as rules; the SLO has no group")
    return SloRules(tuple(groups), tuple(notes))


@dataclass(frozen=True)
class _Found:
    rules: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Reading:
    """How one objective is read: PromQL per window, and the note when the threshold had
    to move to a bucket edge."""

    bad_ratio: dict[float, str]
    events: dict[float, str]
    edge_note: str | None


def _objective_rules(slo: Slo, objective: Objective, dashboard_base_url: str) -> _Found:
    info = OBJECTIVE_KINDS[objective.kind]
    instances = tuple(slo.instances) if slo.instances else None
    scope = Scope(slo.fleet, model_name=slo.model_name or None, instances=instances)
    resolved = resolve_key(scope, info.key)
    if isinstance(resolved, QueryResult):
        return _Found(notes=(f"{objective.kind}: left out, {resolved.message}",))
    reading = _reading(slo, objective, resolved)
    if isinstance(reading, str):
        return _Found(notes=(f"{objective.kind}: left out, {reading}",))
    notes = [f"{objective.kind}: {note}" for note in _resolution_notes(resolved)]
    if reading.edge_note is not None:
        notes.append(f"{objective.kind}: {reading.edge_note}")
    labels = {"fleet": slo.fleet.slug, "slo": slo.slug, "objective": objective.kind}
    rules: list[dict[str, Any]] = []
    for seconds in RECORDED_WINDOWS:
        for name, exprs in ((BAD_RATIO, reading.bad_ratio), (EVENTS, reading.events)):
            record = name + label(seconds)
            rules.append({"record": record, "expr": exprs[seconds], "labels": dict(labels)})
    alerts = _Alerts(slo, objective, info, labels, reading.edge_note, dashboard_base_url)
    rules.extend(alerts.burn(pair) for pair in PAIRS)
    rules.append(alerts.slow())
    for pair in PAIRS:
        if pair.threshold(slo.window_days, objective.target) >= 1.0:
            notes.append(
                f"{objective.kind}: the {pair.name} pair can never fire: its bad ratio "
                f"threshold {pair.threshold(slo.window_days, objective.target):.3g} is "
                f"over 1 at target {objective.target:.4g}"
            )
    return _Found(tuple(rules), tuple(notes))


def _resolution_notes(resolved: ResolvedKey) -> list[str]:
    notes = []
    if len(resolved.groups) > 1:
        notes.append(resolved.message)
    if resolved.coverage_note is not None:
        notes.append(f"not every replica is covered: {resolved.coverage_note}")
    return notes


def _reading(slo: Slo, objective: Objective, resolved: ResolvedKey) -> _Reading | str:
    """The PromQL of the objective per window, or why it cannot be read."""
    if objective.kind == "success":
        reasons = list(slo.bad_finish_reasons or ())
        if not reasons:
            return "no finish reason counts as bad, so nothing could ever burn the budget"
        bad = [matcher("finished_reason", "=~", any_of_regex(reasons))]
        return _Reading(
            bad_ratio={
                w: f"(\n  {_sum('rate', resolved, '', w, slo, bad)}\n  or vector(0)\n)\n/\n"
                f"{_sum('rate', resolved, '', w, slo)}"
                for w in RECORDED_WINDOWS
            },
            events={w: _sum("increase", resolved, "", w, slo) for w in RECORDED_WINDOWS},
            edge_note=None,
        )
    assert objective.threshold_seconds is not None  # a constraint of the model
    edge = _safe_edge(objective.threshold_seconds, resolved)
    if isinstance(edge, str):
        return edge
    edge_note = None
    if edge != objective.threshold_seconds:
        edge_note = (
            f"threshold {objective.threshold_seconds:g} s is not a bucket edge every replica "
            f"of {' / '.join(resolved.names)} has; events at or under {edge:g} s (the edge "
            f"below) count as good, so the bad ratio is overstated and the alerts can fire "
            f"early, never late"
        )
    at_edge = [le_matcher(edge)]
    return _Reading(
        bad_ratio={
            w: f"1 - (\n  {_sum('rate', resolved, '_bucket', w, slo, at_edge)}\n  /\n"
            f"  {_sum('rate', resolved, '_count', w, slo)}\n)"
            for w in RECORDED_WINDOWS
        },
        events={w: _sum("increase", resolved, "_count", w, slo) for w in RECORDED_WINDOWS},
        edge_note=edge_note,
    )


def _safe_edge(threshold: float, resolved: ResolvedKey) -> float | str:
    """The threshold if it is a shared bucket edge, else the shared edge below it: counting
    fewer events as good makes an alert early, never late. A string says why there is none
    (the edge above would count slow events as good: an alert that can miss an outage)."""
    if threshold in resolved.buckets:
        return threshold
    below = [edge for edge in resolved.buckets if edge < threshold]
    if below:
        return below[-1]
    if not resolved.buckets:
        return f"{resolved.name} has no bucket edge shared by every replica"
    return (
        f"threshold {threshold:g} s lies under the lowest bucket edge every replica of "
        f"{' / '.join(resolved.names)} has ({resolved.buckets[0]:g} s): no event can be "
        f"counted as good, so no rule could tell a good period from an outage"
    )


def _sum(
    func: str,
    resolved: ResolvedKey,
    suffix: str,
    window: float,
    slo: Slo,
    extra: Sequence[str] = (),
) -> str:
    """`sum(func(name{sel}[w]) or func(other{sel}[w]))`: one term per name group, each on its
    own instances, so a replica is counted once under the one name it is read by."""
    terms = [
        f"{func}({selector(group.name + suffix, [*_matchers(group, slo), *extra])}"
        f"[{duration(window)}])"
        for group in resolved.groups
    ]
    return "sum(" + "\n    or ".join(terms) + ")"


def _matchers(group: NameGroup, slo: Slo) -> list[str]:
    found = [matcher("instance", "=~", any_of_regex(group.instances))]
    if slo.model_name:
        found.append(matcher("model_name", "=", slo.model_name))
    return found


def _rounded(threshold: float) -> float:
    """The threshold without float noise (0.1344, not 0.13440000000000013): 12 digits are
    far finer than any bad ratio a window can hold."""
    return float(f"{threshold:.12g}")


def _template_safe(text: str) -> str:
    """Annotations are Go templates: a `{{` in a name typed by a user would be run (or break
    the whole rule file), so it is written as a template printing `{{`."""
    return text.replace("{{", '{{ "{{" }}')


@dataclass(frozen=True)
class _Alerts:
    slo: Slo
    objective: Objective
    info: ObjectiveKindInfo
    labels: dict[str, str]
    edge_note: str | None
    dashboard_base_url: str

    def series(self, name: str) -> str:
        return selector(name, [matcher(k, "=", v) for k, v in self.labels.items()])

    def burn(self, pair: BurnPair) -> dict[str, Any]:
        threshold = _rounded(pair.threshold(self.slo.window_days, self.objective.target))
        long, short = label(pair.long_seconds), label(pair.short_seconds)
        expr = (
            f"{self.series(BAD_RATIO + long)} > {go_float(threshold)}\n"
            f"and {self.series(BAD_RATIO + short)} > {go_float(threshold)}\n"
            f"and {self.series(EVENTS + long)} >= {self.slo.min_requests_to_page}"
        )
        factor = pair.factor(self.slo.window_days)
        description = (
            f"{self.what()}. The bad-event ratio exceeds {threshold:.4g} ({factor:.4g}x the "
            f"budgeted rate) over both {long} and {short}, with at least "
            f"{self.slo.min_requests_to_page} {self.info.events} in {long}: at this pace "
            f"{pair.budget_share:.0%} of the {self.slo.window_days}-day error budget goes "
            f"in {long}."
        )
        summary = f"{self.slo.name}: {self.info.label} burning its error budget {factor:.3g}x"
        return self.rule(BURN_ALERT, expr, pair.severity, pair.name, summary, description)

    def slow(self) -> dict[str, Any]:
        window = label(SLOW_WINDOW_SECONDS)
        threshold = _rounded(SLOW_PAIR.threshold(self.slo.window_days, self.objective.target))
        ratio = self.series(BAD_RATIO + window)
        expr = (
            f"{ratio} * {self.series(EVENTS + window)} >= {self.slo.min_bad_events}\n"
            f"and {ratio} > {go_float(threshold)}"
        )
        description = (
            f"{self.what()}. Over {window}, at least {self.slo.min_bad_events} "
            f"{self.info.events} were bad and the bad-event ratio exceeds {threshold:.4g} "
            f"({SLOW_PAIR.factor(self.slo.window_days):.4g}x the budgeted rate). No "
            f"minimum traffic: a low-volume service failing for days is seen here."
        )
        summary = f"{self.slo.name}: {self.info.label} failing slowly over {window}"
        return self.rule(SLOW_ALERT, expr, "ticket", window, summary, description)

    def what(self) -> str:
        target = f"{self.objective.target * 100:.4g}%"
        if self.objective.threshold_seconds is None:
            promise = f"{target} of {self.info.events} finish well"
        else:
            limit = self.objective.threshold_seconds
            promise = f"{target} of {self.info.events} within {limit:g} s"
        return f"SLO {self.slo.name}, {self.info.label} objective ({promise})"

    def rule(
        self, alert: str, expr: str, severity: str, burn_window: str, summary: str, text: str
    ) -> dict[str, Any]:
        if self.edge_note is not None:
            text = f"{text} Note: {self.edge_note}."
        annotations = {"summary": _template_safe(summary), "description": _template_safe(text)}
        if self.edge_note is not None:
            annotations["fleetscope_edge_note"] = _template_safe(self.edge_note)
        if self.slo.runbook_url:
            annotations["runbook_url"] = _template_safe(self.slo.runbook_url)
        base = self.dashboard_base_url.rstrip("/")
        url = f"{base}/slos/{self.slo.fleet.slug}/{self.slo.slug}/"
        annotations["dashboard_url"] = _template_safe(url)
        return {
            "alert": alert,
            "expr": expr,
            "for": FOR[severity],
            "labels": {"severity": severity, "burn_window": burn_window},
            "annotations": annotations,
        }
