"""Celery tasks: an interface over services, nothing more."""

from __future__ import annotations

from celery import shared_task

from inventory.heartbeat import record_heartbeat as record_heartbeat_service


@shared_task(name="inventory.tasks.record_heartbeat", ignore_result=True)
def record_heartbeat() -> None:
    record_heartbeat_service()
