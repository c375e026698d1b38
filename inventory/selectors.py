"""Reads of the inventory app."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Protocol, cast

from django.db.models import OuterRef, QuerySet, Subquery, TextField
from django.db.models.functions import Cast

from fleetscope.lib.lru import LruCache
from inventory.access import scrape_error_for_all
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


class EndpointHealth(Protocol):
    """What `endpoints_with_health` annotates each endpoint with."""

    last_run_at: datetime | None
    last_success_at: datetime | None
    last_status: str | None
    last_error: str | None
    last_error_kind: str | None
    last_duration_seconds: float | None
    last_samples: int | None


def health_of(endpoint: Endpoint) -> EndpointHealth:
    """The annotations of an endpoint read through `endpoints_with_health`."""
    return cast(EndpointHealth, endpoint)


def endpoint_snapshots(*, fleet: Fleet) -> list[EndpointSnapshot]:
    snapshots = []
    for endpoint in endpoints_with_health(fleet=fleet):
        health = health_of(endpoint)
        inventory = getattr(endpoint, "inventory", None)
        snapshots.append(
            EndpointSnapshot(
                endpoint_id=endpoint.pk,
                url=endpoint.url,
                kind=endpoint.kind,
                dialect=inventory.dialect if inventory else None,
                families=inventory.families if inventory else None,
                last_run_at=health.last_run_at,
                last_run_ok=None
                if health.last_status is None
                else health.last_status == ScrapeStatus.SUCCEEDED,
                # Findings are shared by every viewer: no error that tells ports apart.
                last_error=scrape_error_for_all(health.last_error or "", health.last_error_kind),
                last_success_at=health.last_success_at,
                last_error_detail=health.last_error or "",
            )
        )
    return snapshots


@dataclass(frozen=True, slots=True)
class ScopedEndpoint:
    """One enabled endpoint of a scope, with what planning reads of its inventory."""

    endpoint_id: int
    instance: str  # host:port, as Prometheus' `instance` label has it
    kind: str  # the kind its inventory detected: engine, router, dcgm, ...
    families: Mapping[str, Any]  # the inventory's families by name (shared: read only)


# Decoded inventories (families by name) by their JSON text. Decoding a fleet's
# inventories cost 80% of reading them (~26 of 33 ms for 66 endpoints), every render, for
# text that changes only when a layout does. Keyed by the text itself, an entry cannot go
# stale; the dicts are shared, so callers only ever read them.
_FAMILIES: LruCache[str, dict[str, Any]] = LruCache(2048)


def scope_endpoints(
    *, fleet: Fleet, instances: Collection[str] | None = None
) -> list[ScopedEndpoint]:
    """The enabled endpoints of `fleet` (of these instances, when given) that have an
    inventory: the one place that decides which endpoints a query scope covers."""
    endpoints = (
        Endpoint.objects.enabled()
        .filter(fleet=fleet)
        .select_related("inventory")
        .defer("inventory__families", "inventory__engines", "inventory__evidence")
        .annotate(families_text=Cast("inventory__families", output_field=TextField()))
    )
    wanted = None if instances is None else set(instances)
    found = []
    for endpoint in endpoints:
        if wanted is not None and endpoint.instance not in wanted:
            continue
        inventory = getattr(endpoint, "inventory", None)
        if inventory is not None:
            text: str = endpoint.families_text
            families = _FAMILIES.get_or_make(text, partial(json.loads, text))
            found.append(
                ScopedEndpoint(endpoint.pk, endpoint.instance, inventory.detected_kind, families)
            )
    return found
