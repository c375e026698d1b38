"""Scheduler liveness, recorded by a periodic job and read by /readyz."""

from __future__ import annotations

from datetime import datetime

from django.db.models import F
from django.utils import timezone

from inventory.models import JobHeartbeat

HEARTBEAT_JOB = "record-heartbeat"


def record_heartbeat(*, now: datetime | None = None) -> None:
    at = now or timezone.now()
    updated = JobHeartbeat.objects.filter(job=HEARTBEAT_JOB).update(
        last_run_at=at, runs=F("runs") + 1
    )
    if not updated:
        JobHeartbeat.objects.get_or_create(
            job=HEARTBEAT_JOB, defaults={"last_run_at": at, "runs": 1}
        )


def heartbeat_age_seconds(*, now: datetime) -> float | None:
    """Seconds since the scheduler last ran, or None if it never has."""
    row = JobHeartbeat.objects.filter(job=HEARTBEAT_JOB).only("last_run_at").first()
    if row is None:
        return None
    return max(0.0, (now - row.last_run_at).total_seconds())
