"""Loading a recorded history into the embedded store, through the live write path.

    report = history_import(fleet_slug="incident-1129", path="fleet.om")

The file is an OpenMetrics history as Prometheus stored it (`fleetsim history` writes
one; `inventory.history.reading` and `inventory.history.scrapes` say what is read and
how). Everything is read and checked first; then, in one transaction, the targets are
registered (`targets_import`: URL `http://{instance}/metrics`, kind from the `kind` or
`job` label as import_targets decides it) and each timestamp is written as one scrape
cycle through `inventory.services.cycle_record`, exactly as a live cycle is: a frame per
successful scrape, a failed ScrapeRun where `up` was 0, a new layout and inventory where
the series changed, counter resets as they happened. Any fault leaves the database as
it was.

Importing the same history twice is refused: a fleet that already holds scrapes of any
of the history's targets within the history's span gets nothing (`HistoryError`). A
history of other times can go into the same fleet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db import transaction

from inventory.history.reading import HistoryError
from inventory.history.scrapes import HistoryContent, history_read
from inventory.models import Endpoint, Fleet, ScrapeRun
from inventory.registration import RegistrationError, fleet_slug_clean, targets_import
from inventory.services import cycle_record
from inventory.targets import TargetSpec


@dataclass(frozen=True)
class HistoryReport:
    fleet: Fleet
    endpoints_created: int
    endpoints_updated: int
    start: datetime
    end: datetime
    lines: int
    cycles: int
    scrapes: int
    failed: int  # scrapes where up was 0
    samples: int
    frames_written: int
    parses: int  # scrapes parsed in full; the others re-used the parse of their layout


def history_import(
    *,
    fleet_slug: str,
    path: str | Path,
    fleet_name: str | None = None,
    parse_every_scrape: bool = False,
) -> HistoryReport:
    """Load the history at `path` into the fleet `fleet_slug` (created if missing): all of
    it, or with a HistoryError nothing."""
    try:
        slug = fleet_slug_clean(fleet_slug)
    except RegistrationError as exc:
        raise HistoryError(str(exc)) from None
    content = history_read(path, parse_every_scrape=parse_every_scrape)
    specs = [TargetSpec(t.url, t.kind, t.labels) for t in content.targets]
    start, end = content.cycles[0].at, content.cycles[-1].at
    frames = 0
    with transaction.atomic():
        _refuse_overlap(slug, content)
        try:
            registered = targets_import(fleet_slug=slug, fleet_name=fleet_name, specs=specs)
        except RegistrationError as exc:
            raise HistoryError(f"cannot register target {exc}") from None
        fleet = registered.fleet
        endpoints = {
            e.url: e for e in Endpoint.objects.filter(fleet=fleet, url__in=[s.url for s in specs])
        }
        for cycle in content.cycles:
            report = cycle_record(
                fleet.pk, [(endpoints[url], outcome) for url, outcome in cycle.scrapes]
            )
            if report.lost_layouts:
                # Every new layout is sent with its frame; the store losing one mid-import
                # is a bug, not a fault of the file.
                raise RuntimeError(f"layouts lost while importing: {report.lost_layouts[:3]}")
            frames += report.frames_written
    return HistoryReport(
        fleet=fleet,
        endpoints_created=registered.created,
        endpoints_updated=registered.updated,
        start=start,
        end=end,
        lines=content.lines,
        cycles=len(content.cycles),
        scrapes=content.scrapes,
        failed=content.failed,
        samples=content.samples,
        frames_written=frames,
        parses=content.parses,
    )


def _refuse_overlap(slug: str, content: HistoryContent) -> None:
    fleet = Fleet.objects.filter(slug=slug).first()
    if fleet is None:
        return
    start, end = content.cycles[0].at, content.cycles[-1].at
    held = (
        ScrapeRun.objects.filter(
            endpoint__fleet=fleet,
            endpoint__url__in=[t.url for t in content.targets],
            started_at__gte=start,
            started_at__lte=end,
        )
        .order_by()
        .values_list("endpoint__url", flat=True)
        .distinct()
    )
    urls = sorted(held)
    if urls:
        raise HistoryError(
            f"fleet {slug} already holds scrapes of {len(urls)} of this history's targets "
            f"(first {urls[0]}) between {start:%Y-%m-%dT%H:%M:%SZ} and {end:%Y-%m-%dT%H:%M:%SZ}: "
            "it was imported before, or overlaps what is stored; nothing was written"
        )
