"""Findings across the endpoints of one fleet: what differs, what is missing, what is stale.

Pure functions over inventory snapshots, so the same report can be computed
from the database, from a one-shot scrape, or in a test.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from inventory.summary import FamilySummary

# A family whose series count is this many times the fleet median is flagged.
CARDINALITY_OUTLIER_FACTOR = 4.0
CARDINALITY_OUTLIER_MIN_SERIES = 50
# An endpoint is stale after this many scrape intervals without a good scrape.
STALE_AFTER_INTERVALS = 3


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class EndpointSnapshot:
    endpoint_id: int
    url: str
    kind: str
    dialect: str | None
    families: dict[str, FamilySummary] | None
    last_run_at: datetime | None
    last_run_ok: bool | None
    last_error: str  # as every role may read it (inventory.access.scrape_error_for_all)
    last_success_at: datetime | None
    last_error_detail: str = ""  # as the scraper said it: for admins only


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str
    message: str
    endpoints: tuple[str, ...] = field(default=())
    family: str = ""


DeprecatedLookup = Callable[[str], str | None]


def fleet_findings(
    snapshots: Sequence[EndpointSnapshot],
    *,
    now: datetime,
    interval_seconds: float,
    deprecated: DeprecatedLookup,
) -> list[Finding]:
    """All findings, most severe first. `deprecated(name)` returns the replacement or None."""
    findings: list[Finding] = []
    findings += _health(snapshots, now=now, interval_seconds=interval_seconds)
    by_kind: dict[str, list[EndpointSnapshot]] = defaultdict(list)
    for snap in snapshots:
        if snap.families is not None:
            by_kind[snap.kind].append(snap)
    for group in by_kind.values():
        findings += _missing(group)
        findings += _type_and_bucket_drift(group)
        findings += _cardinality(group)
    findings += _dialects(by_kind.get("vllm", []))
    findings += _deprecated(snapshots, deprecated)
    findings += _problems(snapshots)
    order = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return sorted(findings, key=lambda f: (order[f.severity], f.code, f.family))


def _health(
    snapshots: Sequence[EndpointSnapshot], *, now: datetime, interval_seconds: float
) -> list[Finding]:
    out = []
    for snap in snapshots:
        if snap.last_run_at is None:
            out.append(Finding(Severity.WARNING, "never-scraped", "not scraped yet", (snap.url,)))
            continue
        if snap.last_run_ok is False:
            out.append(
                Finding(
                    Severity.CRITICAL, "down", f"last scrape failed: {snap.last_error}", (snap.url,)
                )
            )
            continue
        if snap.last_success_at is not None:
            age = (now - snap.last_success_at).total_seconds()
            if age > STALE_AFTER_INTERVALS * interval_seconds:
                out.append(
                    Finding(
                        Severity.WARNING,
                        "stale",
                        f"last good scrape {age:.0f}s ago",
                        (snap.url,),
                    )
                )
    return out


def _missing(group: list[EndpointSnapshot]) -> list[Finding]:
    if len(group) < 2:
        return []
    present: dict[str, set[str]] = defaultdict(set)
    for snap in group:
        for name in snap.families or {}:
            present[name].add(snap.url)
    urls = {snap.url for snap in group}
    out = []
    for name, having in sorted(present.items()):
        lacking = urls - having
        if lacking:
            out.append(
                Finding(
                    Severity.WARNING,
                    "missing-on-some",
                    f"exposed by {len(having)} of {len(urls)} {group[0].kind} endpoints",
                    tuple(sorted(lacking)),
                    name,
                )
            )
    return out


def _type_and_bucket_drift(group: list[EndpointSnapshot]) -> list[Finding]:
    types: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    buckets: dict[str, dict[tuple[float, ...], list[str]]] = defaultdict(lambda: defaultdict(list))
    for snap in group:
        for name, family in (snap.families or {}).items():
            types[name][family["type"]].append(snap.url)
            if family["buckets"] is not None:
                buckets[name][tuple(family["buckets"])].append(snap.url)
    out = []
    for name, variants in sorted(types.items()):
        if len(variants) > 1:
            shown = ", ".join(f"{t} on {len(u)}" for t, u in sorted(variants.items()))
            out.append(
                Finding(Severity.CRITICAL, "type-differs", f"type differs: {shown}", family=name)
            )
    for name, layouts in sorted(buckets.items()):
        if len(layouts) > 1:
            shown = "; ".join(
                f"last edge {edges[-1]:g} on {len(urls)}" if edges else f"no edges on {len(urls)}"
                for edges, urls in sorted(layouts.items(), key=lambda kv: kv[0][-1:] or (0,))
            )
            out.append(
                Finding(
                    Severity.WARNING,
                    "buckets-differ",
                    f"{len(layouts)} bucket layouts ({shown}); aggregate with care",
                    family=name,
                )
            )
    return out


def _cardinality(group: list[EndpointSnapshot]) -> list[Finding]:
    counts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for snap in group:
        for name, family in (snap.families or {}).items():
            counts[name].append((family["series"], snap.url))
    out = []
    for name, rows in sorted(counts.items()):
        if len(rows) < 3:
            continue
        median = statistics.median(n for n, _ in rows)
        limit = max(CARDINALITY_OUTLIER_MIN_SERIES, median * CARDINALITY_OUTLIER_FACTOR)
        heavy = [(n, url) for n, url in rows if n > limit]
        for n, url in heavy:
            out.append(
                Finding(
                    Severity.WARNING,
                    "cardinality-outlier",
                    f"{n} series against a fleet median of {median:g}",
                    (url,),
                    name,
                )
            )
    return out


def _dialects(group: list[EndpointSnapshot]) -> list[Finding]:
    seen: dict[str, list[str]] = defaultdict(list)
    for snap in group:
        if snap.dialect:
            seen[snap.dialect].append(snap.url)
    if len(seen) < 2:
        return []
    shown = ", ".join(f"{d} on {len(u)}" for d, u in sorted(seen.items()))
    minority = min(seen.values(), key=len)
    return [
        Finding(
            Severity.WARNING,
            "mixed-dialects",
            f"vLLM versions differ across replicas (version skew): {shown}",
            tuple(sorted(minority)),
        )
    ]


def _deprecated(
    snapshots: Sequence[EndpointSnapshot], deprecated: DeprecatedLookup
) -> list[Finding]:
    users: dict[str, list[str]] = defaultdict(list)
    for snap in snapshots:
        for name in snap.families or {}:
            if deprecated(name) is not None:
                users[name].append(snap.url)
    return [
        Finding(
            Severity.INFO,
            "deprecated-name",
            f"deprecated name still exposed; use {deprecated(name)}",
            tuple(sorted(urls)),
            name,
        )
        for name, urls in sorted(users.items())
    ]


def _problems(snapshots: Sequence[EndpointSnapshot]) -> list[Finding]:
    out = []
    for snap in snapshots:
        for name, family in (snap.families or {}).items():
            for problem in family["problems"]:
                out.append(Finding(Severity.WARNING, "family-problem", problem, (snap.url,), name))
    return out
