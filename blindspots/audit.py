"""The audit itself: items -> selectors -> verdicts -> one row per item.

    report = audit_items(fleet, items, errors)

Every item's PromQL is parsed (`blindspots.promql.parse_selectors`); an expression the
parser rejects becomes that item's error and the rest goes on. The selectors of all items
are checked against the fleet in one call (`blindspots.verdicts.check_selectors` reads the
fleet's inventories once), each distinct selector once. An item's verdict is its worst
selector's (in `VERDICT_ORDER`), with that selector's why and since when, the replicas
that should expose it and those that do not, and the rewrite of its expression
(`blindspots.rewrite.rewrite_expression`), which is only ever shown, never applied.
An expression that reads no series (`vector(1)`) cannot go blind: it is live.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from blindspots.promql import PromqlError
from blindspots.rewrite import Rewrite, rewrite_expression
from blindspots.sources import selectors_of
from blindspots.types import VERDICT_ORDER, Item, ItemError, Selector, SelectorVerdict, Verdict
from blindspots.verdicts import check_selectors
from fleetscope.lib.utc import utc_iso as shared_utc_iso

if TYPE_CHECKING:
    from inventory.models import Fleet

# Verdicts a team must act on: the command exits 1 when any item has one.
ACTIONABLE: frozenset[Verdict] = frozenset({"blind", "partly blind"})
NO_SERIES_WHY = "the expression reads no series: nothing here can go blind"


def utc_iso(at: datetime | None) -> str | None:
    """`2026-11-12T14:05:00Z`, or None."""
    return None if at is None else shared_utc_iso(at)


def item_key(item: Item) -> str:
    """Stable across runs while the item stays where it is: what the overview compares."""
    return "\x1f".join((item.kind, item.source, item.where, item.name))


@dataclass(frozen=True)
class ItemResult:
    """One rule, panel or autoscaler with its verdict: its worst selector's."""

    item: Item
    verdict: Verdict
    why: str
    selectors: tuple[SelectorVerdict, ...]
    since: datetime | None = None
    since_text: str = ""
    expected: tuple[str, ...] = ()  # instances that should expose what it reads
    matching: tuple[str, ...] = ()  # of those, the ones that do
    rewrite: Rewrite | None = None

    @property
    def key(self) -> str:
        return item_key(self.item)

    @property
    def missing(self) -> tuple[str, ...]:
        """The replicas that should expose what the item reads and do not (none for a live
        item: one read through a recording rule may have no endpoint at all)."""
        if self.verdict == "live":
            return ()
        have = set(self.matching)
        return tuple(i for i in self.expected if i not in have)

    def to_dict(self) -> dict[str, Any]:
        item = self.item
        rewrite = None
        if self.rewrite is not None:
            rewrite = {
                "before": self.rewrite.before,
                "after": self.rewrite.after,
                "diff": self.rewrite.diff,
                "notes": list(self.rewrite.notes),
            }
        return {
            "key": self.key,
            "kind": item.kind,
            "name": item.name,
            "where": item.where,
            "source": item.source,
            "datasource": item.datasource,
            "expr": item.expr,
            "verdict": self.verdict,
            "why": self.why,
            "since": utc_iso(self.since),
            "since_text": self.since_text,
            "expected": list(self.expected),
            "matching": list(self.matching),
            "missing": list(self.missing),
            "rewrite": rewrite,
            "selectors": [
                {
                    "text": v.selector.text,
                    "metric": v.selector.metric,
                    "functions": list(v.selector.functions),
                    "verdict": v.verdict,
                    "why": v.why,
                    "expected": list(v.expected),
                    "matching": list(v.matching),
                    "since": utc_iso(v.since),
                    "since_text": v.since_text,
                    "replacement": v.replacement,
                }
                for v in self.selectors
            ],
        }


def error_dict(error: ItemError) -> dict[str, str]:
    return {"kind": error.kind, "name": error.name, "where": error.where, "reason": error.reason}


def counts_of(verdicts: Iterable[str], errors: int) -> dict[str, int]:
    """Items by verdict, worst first, every verdict present (0 when none), then errors."""
    counts: dict[str, int] = dict.fromkeys(VERDICT_ORDER, 0)
    for verdict in verdicts:
        counts[verdict] += 1
    counts["errors"] = errors
    return counts


@dataclass(frozen=True)
class AuditReport:
    fleet: str  # the fleet's slug
    started: datetime
    finished: datetime
    items: tuple[ItemResult, ...]
    errors: tuple[ItemError, ...]
    inputs: tuple[str, ...] = field(default=())  # what was read: files, uploads, the API

    @property
    def counts(self) -> dict[str, int]:
        return counts_of((r.verdict for r in self.items), len(self.errors))

    @property
    def actionable(self) -> int:
        """Items that are blind or partly blind (the command's exit status is 1 when > 0)."""
        return sum(1 for r in self.items if r.verdict in ACTIONABLE)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fleet": self.fleet,
            "started": utc_iso(self.started),
            "finished": utc_iso(self.finished),
            "counts": self.counts,
            "inputs": list(self.inputs),
            "items": [r.to_dict() for r in self.items],
            "errors": [error_dict(e) for e in self.errors],
        }


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    return min(verdicts, key=VERDICT_ORDER.index, default="live")


def item_result(item: Item, verdicts: Sequence[SelectorVerdict]) -> ItemResult:
    """The item's row from its selectors' verdicts: the worst one decides."""
    if not verdicts:
        return ItemResult(item, "live", NO_SERIES_WHY, ())
    verdict = worst(v.verdict for v in verdicts)
    deciding = [v for v in verdicts if v.verdict == verdict]
    why = "; ".join(dict.fromkeys(v.why for v in deciding if v.why))
    # The item went blind when its first deciding selector did.
    dated = [(v.since, i) for i, v in enumerate(deciding) if v.since is not None]
    since: datetime | None = None
    since_text = ""
    if dated:
        since, first = min(dated)
        since_text = deciding[first].since_text
    if not since_text:
        since_text = next((v.since_text for v in deciding if v.since_text), "")
    expected = tuple(dict.fromkeys(i for v in deciding for i in v.expected))
    # A replica matches the item only when it matches every deciding selector.
    matching = tuple(i for i in expected if all(i in v.matching for v in deciding))
    rewrite = rewrite_expression(item.expr, list(verdicts)) if verdict != "live" else None
    return ItemResult(
        item, verdict, why, tuple(verdicts), since, since_text, expected, matching, rewrite
    )


def recorded_names(items: Iterable[Item]) -> frozenset[str]:
    """The series recording rules write: a selector reading one reads the rule's output,
    not an endpoint's."""
    return frozenset(i.name for i in items if i.kind == "rule" and i.recorded)


def audit_items(
    fleet: Fleet,
    items: Sequence[Item],
    errors: Sequence[ItemError] = (),
    *,
    prometheus_names: frozenset[str] | None = None,
    prometheus_held_names: frozenset[str] | None = None,
    inputs: Sequence[str] = (),
    now: datetime | None = None,
) -> AuditReport:
    """Audit `items` against `fleet`; `errors` (files that could not be read) are carried
    into the report beside the items' own."""
    started = now or datetime.now(UTC)
    found_errors = list(errors)
    parsed: list[tuple[Item, tuple[Selector, ...]]] = []
    for item in items:
        try:
            parsed.append((item, selectors_of(item)))
        except PromqlError as exc:
            found_errors.append(ItemError(item.kind, item.name, item.where, str(exc)))
    distinct = list(dict.fromkeys(s for _, selectors in parsed for s in selectors))
    checked: Mapping[Selector, SelectorVerdict] = {}
    if distinct:
        verdicts = check_selectors(
            fleet,
            distinct,
            prometheus_names=prometheus_names,
            recorded_names=recorded_names(items),
            prometheus_held_names=prometheus_held_names,
        )
        checked = {v.selector: v for v in verdicts}
    results = tuple(
        item_result(item, [checked[s] for s in selectors]) for item, selectors in parsed
    )
    finished = datetime.now(UTC) if now is None else now
    return AuditReport(fleet.slug, started, finished, results, tuple(found_errors), tuple(inputs))
