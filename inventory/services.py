"""Writes of the inventory app: scrape cycles and the embedded store they fill."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from inventory.models import Endpoint, EndpointInventory, Fleet, ScrapeRun, ScrapeStatus
from inventory.scraping import (
    FleetJob,
    OutboundPolicy,
    ScrapeConfig,
    ScrapeLimits,
    ScrapeOutcome,
    ScrapePool,
)
from inventory.store import FrameWrite, frames_prune, frames_write

ERROR_MAX_CHARS = 500


def outbound_policy() -> OutboundPolicy:
    return OutboundPolicy(
        allow=settings.FLEETSCOPE_OUTBOUND_ALLOW,
        allow_loopback=settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK,
    )


def scrape_limits() -> ScrapeLimits:
    return ScrapeLimits(
        timeout_seconds=settings.FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS,
        body_bytes=settings.FLEETSCOPE_SCRAPE_BODY_LIMIT_BYTES,
        samples=settings.FLEETSCOPE_SCRAPE_SAMPLE_LIMIT,
        labels_per_series=settings.FLEETSCOPE_SCRAPE_LABEL_LIMIT,
        label_name_bytes=settings.FLEETSCOPE_SCRAPE_LABEL_NAME_LIMIT_BYTES,
        label_value_bytes=settings.FLEETSCOPE_SCRAPE_LABEL_VALUE_LIMIT_BYTES,
    )


@dataclass
class _ProcessState:
    """The scrape pool of this process, and layouts each fleet's scrapers must re-send.

    Fleets are keyed by their UUID, not their id: ids can be reused after a delete.
    """

    pool: ScrapePool | None = None
    in_process_only: bool = False
    forget: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_state = _ProcessState()


def scrape_pool() -> ScrapePool:
    with _state.lock:
        if _state.pool is None:
            policy = outbound_policy()  # validates the allow-list here, not in a worker
            _state.pool = ScrapePool(
                processes=0 if _state.in_process_only else settings.FLEETSCOPE_SCRAPE_PROCESSES,
                config=ScrapeConfig(
                    allow=tuple(settings.FLEETSCOPE_OUTBOUND_ALLOW),
                    allow_loopback=policy.allow_loopback,
                    limits=scrape_limits(),
                    concurrency=settings.FLEETSCOPE_SCRAPE_CONCURRENCY,
                ),
            )
        return _state.pool


def scrape_in_this_process() -> None:
    """Scrape without worker processes from now on.

    For Celery's pool processes: they may not start children of their own, and
    Celery's concurrency already spreads fleets over the cores.
    """
    scrape_pool_close()
    _state.in_process_only = True


def scrape_pool_close() -> None:
    """Stop this process's scrape workers (at shutdown)."""
    with _state.lock:
        pool, _state.pool = _state.pool, None
    if pool is not None:
        pool.close()


@dataclass(frozen=True)
class CycleReport:
    fleet_id: int
    claimed: bool
    succeeded: int = 0
    failed: int = 0
    samples: int = 0
    frames_written: int = 0
    # URLs whose layout the database lacked; the scraper re-sends them next cycle.
    lost_layouts: tuple[str, ...] = ()


def fleet_claim(*, fleet_id: int, now: datetime, lease_seconds: float) -> bool:
    """Claim the fleet's scrape lease; False when another cycle still holds it.

    A conditional UPDATE, so two workers racing for the same fleet cannot both win.
    """
    claimed = (
        Fleet.objects.filter(pk=fleet_id)
        .filter(Q(scrape_lease_until__isnull=True) | Q(scrape_lease_until__lte=now))
        .update(scrape_lease_until=now + timedelta(seconds=lease_seconds))
    )
    return claimed == 1


def fleet_release(*, fleet_id: int) -> None:
    Fleet.objects.filter(pk=fleet_id).update(scrape_lease_until=None)


def fleet_scrape(*, fleet_id: int, now: datetime | None = None) -> CycleReport:
    """Scrape every enabled endpoint of a fleet once and record what came back (a Celery
    task's cycle: one fleet per task)."""
    return _fleets_scrape([fleet_id], now=now)[0]


def fleets_scrape_all(*, now: datetime | None = None) -> list[CycleReport]:
    """The embedded scheduler's job: every fleet, all scraped at once in this process's
    pool, so an endpoint that hangs until its deadline delays no other fleet's scrapes."""
    return _fleets_scrape(list(Fleet.objects.values_list("pk", flat=True)), now=now)


def _fleets_scrape(fleet_ids: list[int], *, now: datetime | None) -> list[CycleReport]:
    """One cycle of these fleets, in their order; a fleet another cycle holds is skipped."""
    now = now or timezone.now()
    lease = settings.FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS * 3
    # Every fleet that exists: the pool drops what it kept for any other (deleted since),
    # here and in its workers, as does the list of layouts to re-send.
    codes = {pk: str(code) for pk, code in Fleet.objects.values_list("pk", "code")}
    for code in _state.forget.keys() - codes.values():
        del _state.forget[code]
    claimed = [
        pk
        for pk in fleet_ids
        if pk in codes and fleet_claim(fleet_id=pk, now=now, lease_seconds=lease)
    ]
    reports: dict[int, CycleReport] = {}
    try:
        endpoints: dict[int, list[Endpoint]] = {pk: [] for pk in claimed}
        for endpoint in Endpoint.objects.enabled().filter(fleet_id__in=claimed):
            endpoints[endpoint.fleet_id].append(endpoint)
        jobs = {
            codes[pk]: FleetJob([e.url for e in endpoints[pk]], _state.forget.pop(codes[pk], []))
            for pk in claimed
        }
        outcomes = scrape_pool().scrape_fleets(jobs, live=codes.values())
        for pk in claimed:
            code = codes[pk]
            report = cycle_record(pk, list(zip(endpoints[pk], outcomes[code], strict=True)))
            if report.lost_layouts:
                _state.forget[code] = list(report.lost_layouts)
            reports[pk] = report
    finally:
        for pk in claimed:
            fleet_release(fleet_id=pk)
    return [reports.get(pk) or CycleReport(pk, claimed=False) for pk in fleet_ids]


def cycle_record(fleet_id: int, results: list[tuple[Endpoint, ScrapeOutcome]]) -> CycleReport:
    """Write one cycle in one transaction: a cycle is recorded whole or not at all."""
    runs = [_run_row(endpoint, outcome) for endpoint, outcome in results]
    good = [(e, o) for e, o in results if o.ok and o.frame is not None]
    by_id = {endpoint.pk: (endpoint, outcome) for endpoint, outcome in good}
    resolution = timedelta(seconds=settings.FLEETSCOPE_STORE_RESOLUTION_SECONDS)
    with transaction.atomic():
        written = frames_write(
            [FrameWrite(e.pk, o.started_at, o.frame) for e, o in good if o.frame is not None],
            resolution=resolution,
        )
        # The scraper thinks the store has these layouts, but it does not (restored or
        # pruned): their frames were skipped; ask for the layouts again.
        lost_layouts = [by_id[endpoint_id][1].url for endpoint_id in written.lost_layouts]
        inventoried = set(
            EndpointInventory.objects.filter(endpoint_id__in=list(by_id)).values_list(
                "endpoint_id", flat=True
            )
        )
        for endpoint_id, series_set_id in written.series_sets.items():
            endpoint, outcome = by_id[endpoint_id]
            # The inventory follows each layout the scraper reports as new; a layout
            # seen again recently (a flip back) leaves it as it is.
            if outcome.inventory is not None:
                _write_inventory(endpoint, series_set_id, outcome)
            elif endpoint_id not in inventoried:
                lost_layouts.append(outcome.url)
        ScrapeRun.objects.bulk_create(runs, ignore_conflicts=True)
    return CycleReport(
        fleet_id,
        claimed=True,
        succeeded=len(good),
        failed=len(results) - len(good),
        samples=sum(o.sample_count for _, o in good),
        frames_written=written.frames,
        lost_layouts=tuple(lost_layouts),
    )


def _run_row(endpoint: Endpoint, outcome: ScrapeOutcome) -> ScrapeRun:
    error = outcome.error
    return ScrapeRun(
        endpoint=endpoint,
        started_at=outcome.started_at,
        duration_seconds=outcome.duration_seconds,
        status=ScrapeStatus.SUCCEEDED if error is None else ScrapeStatus.FAILED,
        error_kind="" if error is None else str(error.kind),
        error="" if error is None else error.message[:ERROR_MAX_CHARS],
        body_bytes=outcome.body_bytes,
        samples=outcome.sample_count,
    )


def _write_inventory(endpoint: Endpoint, series_set_id: int, outcome: ScrapeOutcome) -> None:
    """Refresh the endpoint's inventory; only called when its series layout changed."""
    snapshot = outcome.inventory
    assert snapshot is not None  # callers check; narrows the type
    EndpointInventory.objects.update_or_create(
        endpoint=endpoint,
        defaults={
            "series_set_id": series_set_id,
            "scraped_at": outcome.started_at,
            "dialect": snapshot.dialect,
            "detected_kind": snapshot.kind,
            "families": snapshot.families,
            "engines": list(snapshot.engines),
            "evidence": list(snapshot.evidence),
        },
    )


def store_prune(*, now: datetime | None = None) -> int:
    """Delete frames and scrape runs past the retention window; return how many frames went."""
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.FLEETSCOPE_STORE_RETENTION_HOURS)
    deleted = frames_prune(before=cutoff)
    ScrapeRun.objects.filter(started_at__lt=cutoff).delete()
    return deleted
