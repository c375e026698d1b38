"""Every periodic job, declared once.

Celery beat reads this in production; the in-process scheduler reads it in the
embedded mode. Each job names a Celery task (for beat) and the plain function
that task calls (for the in-process scheduler), so both modes run the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from django.conf import settings


@dataclass(frozen=True)
class PeriodicJob:
    name: str
    task: str  # dotted name of the Celery task
    function: str  # dotted path of the function the task calls
    interval_seconds: float
    # The in-process scheduler runs each lane on its own thread, so a job stuck in one
    # lane (a live overview waiting on a slow Prometheus) never delays another's (scrapes).
    # Celery runs every task on its own anyway.
    lane: str = "main"

    @property
    def expires_seconds(self) -> float:
        # A tick that waited longer than most of its interval is stale: drop it
        # rather than replay a backlog after a stalled worker or broker outage.
        return self.interval_seconds * 0.9


def periodic_jobs() -> list[PeriodicJob]:
    interval = float(settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS)
    return [
        PeriodicJob(
            name="record-heartbeat",
            task="inventory.tasks.record_heartbeat",
            function="inventory.heartbeat.record_heartbeat",
            interval_seconds=interval,
        ),
        PeriodicJob(
            name="scrape-fleets",
            task="inventory.tasks.scrape_all_fleets",
            function="inventory.services.fleets_scrape_all",
            interval_seconds=interval,
        ),
        PeriodicJob(
            name="publish-overviews",
            task="dashboard.tasks.publish_overviews",
            function="dashboard.live.overviews_publish",
            interval_seconds=interval,
            lane="live",
        ),
        PeriodicJob(
            # Hourly, so a month's report is stored within an hour of the month's end even
            # when the process was down at midnight; a stored month is never rebuilt.
            name="store-monthly-cost-reports",
            task="capacity.tasks.store_monthly_cost_reports",
            function="capacity.services.monthly_reports_store",
            interval_seconds=3600.0,
        ),
        PeriodicJob(
            name="prune-store",
            task="inventory.tasks.prune_store",
            function="inventory.services.store_prune",
            interval_seconds=600.0,
        ),
    ]


class BeatOptions(TypedDict):
    expires: float


class BeatEntry(TypedDict):
    """One entry of Celery beat's `beat_schedule` setting."""

    task: str
    schedule: float
    options: BeatOptions


def beat_schedule() -> dict[str, BeatEntry]:
    return {
        job.name: {
            "task": job.task,
            "schedule": job.interval_seconds,
            "options": {"expires": job.expires_seconds},
        }
        for job in periodic_jobs()
    }
