"""Celery tasks: an interface over services, nothing more."""

from __future__ import annotations

from celery import shared_task

from capacity.services import monthly_reports_store


@shared_task(name="capacity.tasks.store_monthly_cost_reports", ignore_result=True)
def store_monthly_cost_reports() -> None:
    monthly_reports_store()
