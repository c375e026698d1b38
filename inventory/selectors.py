"""Reads of the inventory app."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from inventory.drift import EndpointSnapshot
from inventory.models import Endpoint, Fleet, ScrapeRun, ScrapeStatus


def fleet_list() -> QuerySet[Fleet]:
    return Fleet.objects.order_by("name")


def endpoints_with_health(*, fleet: Fleet) -> QuerySet[Endpoint]:
    """Endpoints of a fleet with their inventory and last scrape, in a single query.

    Each figure is a newest-first subquery on the (endpoint, -started_at) index, so
    the cost does not grow with the retained scrape history (a MAX over the join
    scanned every run: 0.4 s for 32 replicas after a few hours).
    """
    latest = ScrapeRun.objects.filter(endpoint=OuterRef("pk")).order_by("-started_at")
    succeeded = latest.filter(status=ScrapeStatus.SUCCEEDED)
    return (
        Endpoint.objects.filter(fleet=fleet)
        .select_related("inventory")
        .annotate(
            last_run_at=Subquery(latest.values("started_at")[:1]),
            last_success_at=Subquery(succeeded.values("started_at")[:1]),
            last_status=Subquery(latest.values("status")[:1]),
            last_error=Subquery(latest.values("error")[:1]),
            last_error_kind=Subquery(latest.values("error_kind")[:1]),
            last_duration_seconds=Subquery(latest.values("duration_seconds")[:1]),
            last_samples=Subquery(latest.values("samples")[:1]),
        )
        .order_by("kind", "url")
    )


def endpoint_snapshots(*, fleet: Fleet) -> list[EndpointSnapshot]:
    snapshots = []
    for endpoint in endpoints_with_health(fleet=fleet):
        inventory = getattr(endpoint, "inventory", None)
        snapshots.append(
            EndpointSnapshot(
                endpoint_id=endpoint.pk,
                url=endpoint.url,
                kind=endpoint.kind,
                dialect=inventory.dialect if inventory else None,
                families=inventory.families if inventory else None,
                last_run_at=endpoint.last_run_at,
                last_run_ok=None
                if endpoint.last_status is None
                else endpoint.last_status == ScrapeStatus.SUCCEEDED,
                last_error=endpoint.last_error or "",
                last_success_at=endpoint.last_success_at,
            )
        )
    return snapshots
