"""Writes of the inventory app: scrape cycles and the embedded store they fill."""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from inventory.models import (
    Endpoint,
    EndpointInventory,
    Fleet,
    SampleFrame,
    ScrapeRun,
    ScrapeStatus,
    SeriesSet,
)
from inventory.netpolicy import OutboundPolicy
from inventory.scrape import ScrapeLimits, ScrapeOutcome
from inventory.scrape_pool import ScrapeConfig, ScrapePool

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
    """Scrape every enabled endpoint of a fleet once and record what came back."""
    now = now or timezone.now()
    lease = settings.FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS * 3
    if not fleet_claim(fleet_id=fleet_id, now=now, lease_seconds=lease):
        return CycleReport(fleet_id, claimed=False)
    try:
        endpoints = list(Endpoint.objects.enabled().filter(fleet_id=fleet_id))
        code = str(Fleet.objects.values_list("code", flat=True).get(pk=fleet_id))
        forget = _state.forget.pop(code, [])
        outcomes = scrape_pool().scrape(code, [e.url for e in endpoints], forget)
        report = _record_cycle(fleet_id, list(zip(endpoints, outcomes, strict=True)))
        if report.lost_layouts:
            _state.forget[code] = list(report.lost_layouts)
        return report
    finally:
        fleet_release(fleet_id=fleet_id)


def _record_cycle(fleet_id: int, results: list[tuple[Endpoint, ScrapeOutcome]]) -> CycleReport:
    """Write one cycle in one transaction: a cycle is recorded whole or not at all."""
    runs = [_run_row(endpoint, outcome) for endpoint, outcome in results]
    good = [(e, o) for e, o in results if o.ok]
    frames: list[SampleFrame] = []
    lost_layouts: list[str] = []
    resolution = timedelta(seconds=settings.FLEETSCOPE_STORE_RESOLUTION_SECONDS)
    with transaction.atomic():
        ids = [endpoint.pk for endpoint, _ in good]
        # Only a resolution limit needs the previous frame times; with none (the default)
        # skip the query, which would otherwise scan the whole retention window.
        latest = _latest_frame_times(ids) if resolution else {}
        known = {
            (endpoint_id, digest): pk
            for endpoint_id, digest, pk in SeriesSet.objects.filter(
                endpoint_id__in=ids, digest__in={o.digest for _, o in good}
            ).values_list("endpoint_id", "digest", "pk")
        }
        inventoried = dict(
            EndpointInventory.objects.filter(endpoint_id__in=ids).values_list(
                "endpoint_id", "series_set_id"
            )
        )
        for endpoint, outcome in good:
            series_set_id = known.get((endpoint.pk, outcome.digest))
            if series_set_id is None:
                if outcome.layout_blob is None:
                    # The scraper thinks we have this layout, but the database does not
                    # (restored or pruned): skip the frame and ask for the layout again.
                    lost_layouts.append(outcome.url)
                    continue
                series_set_id = SeriesSet.objects.create(
                    endpoint=endpoint,
                    digest=outcome.digest,
                    series_blob=outcome.layout_blob,
                    series_count=outcome.series_count,
                    first_seen_at=outcome.started_at,
                ).pk
            # The inventory follows each layout the scraper reports as new; a layout
            # seen again recently (a flip back) leaves it as it is.
            if outcome.inventory is not None:
                _write_inventory(endpoint, series_set_id, outcome)
            elif endpoint.pk not in inventoried:
                lost_layouts.append(outcome.url)
            last = latest.get(endpoint.pk)
            if last is None or outcome.started_at - last >= resolution:
                frames.append(
                    SampleFrame(
                        endpoint=endpoint,
                        series_set_id=series_set_id,
                        at=outcome.started_at,
                        values_blob=outcome.values_blob,
                        # Fresh per row: see SampleFrame.token (the read cache's key).
                        token=secrets.randbits(63),
                    )
                )
        ScrapeRun.objects.bulk_create(runs, ignore_conflicts=True)
        SampleFrame.objects.bulk_create(frames, ignore_conflicts=True)
    return CycleReport(
        fleet_id,
        claimed=True,
        succeeded=len(good),
        failed=len(results) - len(good),
        samples=sum(o.sample_count for _, o in good),
        frames_written=len(frames),
        lost_layouts=tuple(lost_layouts),
    )


def _latest_frame_times(endpoint_ids: list[int]) -> dict[int, datetime]:
    # Bounded to the last day: enough for any sensible resolution, and index-friendly.
    since = timezone.now() - timedelta(days=1)
    rows = (
        SampleFrame.objects.filter(endpoint_id__in=endpoint_ids, at__gte=since)
        .values("endpoint_id")
        .annotate(last=Max("at"))
    )
    return {row["endpoint_id"]: row["last"] for row in rows}


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


def fleets_scrape_all(*, now: datetime | None = None) -> list[CycleReport]:
    """The embedded scheduler's job: every fleet, one after the other, in this process."""
    return [
        fleet_scrape(fleet_id=fleet_id, now=now)
        for fleet_id in Fleet.objects.values_list("pk", flat=True)
    ]


def store_prune(*, now: datetime | None = None) -> int:
    """Delete frames past the retention window; return how many went."""
    now = now or timezone.now()
    cutoff = now - timedelta(hours=settings.FLEETSCOPE_STORE_RETENTION_HOURS)
    deleted, _ = SampleFrame.objects.filter(at__lt=cutoff).delete()
    ScrapeRun.objects.filter(started_at__lt=cutoff).delete()
    return deleted
