"""Running and storing a fleet's audit: from its stored sources (uploaded on the page),
files given on the command line and, when asked, the rules of the configured Prometheus.

    report, run = audit_fleet(fleet, paths=AuditPaths(rules=(Path("slo-rules.yml"),)))

A run is stored in one transaction with the source whose upload caused it (`sources_upload`),
so nothing is ever half-stored: a source without its run, or a run with half its rows.
Nothing read here is ever changed: the rewrites are shown and exported, not applied.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import transaction

from blindspots.audit import AuditReport, audit_items
from blindspots.models import AuditRun, AuditSource, SourceKind
from blindspots.prometheus import (
    HELD_SOURCE,
    NAMES_SOURCE,
    SOURCE_NAME,
    names_from_prometheus,
    names_held_by_prometheus,
    rules_from_prometheus,
)
from blindspots.promql import PromqlError
from blindspots.sources import (
    MAX_UPLOAD_BYTES,
    SUFFIXES,
    items_from_paths,
    items_from_text,
    items_from_upload,
    selectors_of,
)
from blindspots.types import Item, ItemError
from inventory.models import Fleet

# One upload at most (the sources' own limit): a dashboard of 10,000 panels is about 5 MiB.
MAX_SOURCE_BYTES = MAX_UPLOAD_BYTES
# How far back the overview looks for items that were live and are not now.
NEW_BLIND_WINDOW = timedelta(hours=24)
FILE_SUFFIXES = SUFFIXES
KIND_OF_ITEM = {
    "panel": SourceKind.DASHBOARD,
    "rule": SourceKind.RULES,
    "autoscaler": SourceKind.AUTOSCALER,
}


class SourceError(ValueError):
    """A file or upload that cannot be audited at all; the message says why."""


@dataclass(frozen=True)
class AuditPaths:
    """Files and folders given on the command line, by what they hold."""

    rules: tuple[Path, ...] = ()
    dashboards: tuple[Path, ...] = ()
    autoscalers: tuple[Path, ...] = ()

    def by_kind(self) -> Iterable[tuple[str, Path]]:
        for kind, paths in (
            (SourceKind.RULES, self.rules),
            (SourceKind.DASHBOARD, self.dashboards),
            (SourceKind.AUTOSCALER, self.autoscalers),
        ):
            for path in paths:
                yield kind, path


def items_of_source(source: AuditSource) -> tuple[list[Item], list[ItemError]]:
    return items_from_text(source.content, source.name)


def files_under(path: Path) -> list[Path]:
    """The files the sources read under a folder (or the file itself)."""
    if path.is_dir():
        return sorted(
            p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES)
        )
    return [path]


@dataclass
class Gathered:
    items: list[Item] = field(default_factory=list)
    errors: list[ItemError] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    prometheus_names: frozenset[str] | None = None  # what Prometheus saw lately
    prometheus_held_names: frozenset[str] | None = None  # ... or held, stale ones too


def gather(fleet: Fleet, *, paths: AuditPaths | None, prometheus_rules: bool) -> Gathered:
    found = Gathered()
    for source in AuditSource.objects.filter(fleet=fleet).order_by("uploaded_at", "id"):
        items, errors = items_of_source(source)
        found.items.extend(items)
        found.errors.extend(errors)
        found.inputs.append(f"upload {source.name}")
    if paths is not None and (given := [path for _, path in paths.by_kind()]):
        items, errors = items_from_paths(given)
        found.items.extend(items)
        found.errors.extend(errors)
        found.inputs.extend(str(p) for p in given)
    if prometheus_rules:
        items, errors = rules_from_prometheus()
        found.items.extend(items)
        found.errors.extend(errors)
        found.inputs.append(SOURCE_NAME)
        read = read_names(found.items)
        found.prometheus_names, errors = names_from_prometheus(read)
        found.errors.extend(errors)
        if found.prometheus_names is not None:
            found.inputs.append(NAMES_SOURCE)
        if found.prometheus_names is not None and read - found.prometheus_names:
            # Some names have no recent sample: did Prometheus hold them lately (they
            # stopped) or never (a typo)?
            found.prometheus_held_names, errors = names_held_by_prometheus()
            found.errors.extend(errors)
            if found.prometheus_held_names is not None:
                found.inputs.append(HELD_SOURCE)
    return found


def read_names(items: Sequence[Item]) -> set[str]:
    """The metric names the items' queries read (those that parse)."""
    names: set[str] = set()
    for item in items:
        with suppress(PromqlError):  # an unparsable query is its own error in the audit
            names.update(s.metric for s in selectors_of(item) if s.metric)
    return names


def audit_gathered(fleet: Fleet, found: Gathered) -> AuditReport:
    return audit_items(
        fleet,
        found.items,
        found.errors,
        inputs=found.inputs,
        prometheus_names=found.prometheus_names,
        prometheus_held_names=found.prometheus_held_names,
    )


def run_store(fleet: Fleet, report: AuditReport, *, with_prometheus_rules: bool) -> AuditRun:
    return AuditRun.objects.create(
        fleet=fleet,
        started_at=report.started,
        finished_at=report.finished,
        with_prometheus_rules=with_prometheus_rules,
        counts=report.counts,
        report=report.to_dict(),
        live_keys=sorted({r.key for r in report.items if r.verdict == "live"}),
        not_live_keys=sorted({r.key for r in report.items if r.verdict != "live"}),
    )


def audit_fleet(
    fleet: Fleet,
    *,
    paths: AuditPaths | None = None,
    prometheus_rules: bool = False,
    store: bool = True,
) -> tuple[AuditReport, AuditRun | None]:
    """Audit the fleet's stored sources, `paths` and (when asked) Prometheus' rules; store
    the run (one row, in one transaction) unless `store` is false."""
    found = gather(fleet, paths=paths, prometheus_rules=prometheus_rules)
    report = audit_gathered(fleet, found)
    if not store:
        return report, None
    with transaction.atomic():
        run = run_store(fleet, report, with_prometheus_rules=prometheus_rules)
    return report, run


@dataclass(frozen=True)
class UploadOutcome:
    stored: tuple[AuditSource, ...]
    refused: tuple[tuple[str, str], ...]  # (file name, reason)
    run: AuditRun | None  # the audit run again, when anything was stored


def source_check(name: str, content: bytes) -> tuple[str, str]:
    """(kind, text) of an upload that holds something to audit; SourceError otherwise."""
    items, errors = items_from_upload(name, content)
    if not items:
        reasons = "; ".join(dict.fromkeys(e.reason for e in errors if e.kind == "file"))
        reasons = reasons or "; ".join(dict.fromkeys(f"{e.name}: {e.reason}" for e in errors))
        raise SourceError(reasons or "no rule, panel or autoscaler query found in it")
    kinds = Counter(KIND_OF_ITEM[i.kind] for i in items)
    return kinds.most_common(1)[0][0], content.decode("utf-8-sig")


def sources_upload(
    fleet: Fleet, files: Sequence[tuple[str, bytes]], *, prometheus_rules: bool = False
) -> UploadOutcome:
    """Store each upload that holds something to audit and run the audit again, all in one
    transaction; an upload that does not is refused with its reason and stores nothing."""
    accepted: list[tuple[str, str, str]] = []
    refused: list[tuple[str, str]] = []
    for name, content in files:
        shown = (name or "upload")[:255]
        try:
            kind, text = source_check(shown, content)
        except SourceError as exc:
            refused.append((shown, str(exc)))
            continue
        accepted.append((shown, kind, text))
    if not accepted:
        return UploadOutcome((), tuple(refused), None)
    with transaction.atomic():
        stored = tuple(
            AuditSource.objects.create(fleet=fleet, kind=kind, name=name, content=text)
            for name, kind, text in accepted
        )
        found = gather(fleet, paths=None, prometheus_rules=prometheus_rules)
        report = audit_gathered(fleet, found)
        run = run_store(fleet, report, with_prometheus_rules=prometheus_rules)
    return UploadOutcome(stored, tuple(refused), run)


def source_delete(fleet: Fleet, source_id: int) -> bool:
    """Delete one stored source of the fleet and run the audit again, in one transaction."""
    with transaction.atomic():
        deleted, _ = AuditSource.objects.filter(fleet=fleet, pk=source_id).delete()
        if deleted:
            found = gather(fleet, paths=None, prometheus_rules=False)
            report = audit_gathered(fleet, found)
            run_store(fleet, report, with_prometheus_rules=False)
    return bool(deleted)


def latest_run(fleet: Fleet) -> AuditRun | None:
    return AuditRun.objects.filter(fleet=fleet).order_by("-started_at", "-id").first()


def new_blind_spots(fleet: Fleet, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """The items of the latest run that are not live now and were live in an earlier run of
    the last 24 h (the overview's badge). Reads the runs' keys; the latest run's rows only
    when something is new."""
    now = now or datetime.now(UTC)
    runs = list(
        AuditRun.objects.filter(fleet=fleet, started_at__gte=now - NEW_BLIND_WINDOW)
        .order_by("-started_at", "-id")
        .values_list("pk", "live_keys", "not_live_keys")
    )
    if len(runs) < 2:
        return []
    (latest, _, not_live), earlier = runs[0], runs[1:]
    were_live = {key for _, live, _ in earlier for key in live}
    new = set(not_live) & were_live
    if not new:
        return []
    report = AuditRun.objects.values_list("report", flat=True).get(pk=latest)
    return [row for row in report.get("items", []) if row.get("key") in new]
