"""Celery tasks: an interface over services, nothing more."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from inventory import services
from inventory.heartbeat import record_heartbeat as record_heartbeat_service
from inventory.models import Fleet


@shared_task(name="inventory.tasks.record_heartbeat", ignore_result=True)
def record_heartbeat() -> None:
    record_heartbeat_service()


@shared_task(name="inventory.tasks.scrape_fleet", ignore_result=True, acks_late=True)
def scrape_fleet(fleet_id: int) -> None:
    # No retry here: the next beat tick is the retry, and the lease stops overlap.
    services.fleet_scrape(fleet_id=fleet_id)


@shared_task(name="inventory.tasks.scrape_all_fleets", ignore_result=True)
def scrape_all_fleets() -> None:
    """Fan out one task per fleet, so workers shard scrapes by fleet."""
    expires = settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS * 0.9
    for fleet_id in Fleet.objects.values_list("pk", flat=True):
        scrape_fleet.apply_async((fleet_id,), expires=expires)


@shared_task(name="inventory.tasks.prune_store", ignore_result=True)
def prune_store() -> None:
    services.store_prune()
