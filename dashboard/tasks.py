"""Celery tasks of the dashboard: an interface over dashboard.live."""

from __future__ import annotations

from celery import shared_task

from dashboard import live


@shared_task(name="dashboard.tasks.publish_overviews", ignore_result=True)
def publish_overviews() -> None:
    live.overviews_publish()
