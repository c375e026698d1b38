"""The Celery app for production mode (worker and beat share the Django settings)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleetscope.settings")

app = Celery("fleetscope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _install_beat_schedule(sender: Celery, **kwargs: object) -> None:
    from fleetscope.schedule import beat_schedule

    sender.conf.beat_schedule = beat_schedule()


@worker_process_init.connect
def scrape_inside_worker_processes(**kwargs: object) -> None:
    from fleetscope.lib.heap import freeze_startup_heap
    from inventory.services import scrape_in_this_process

    scrape_in_this_process()
    freeze_startup_heap()
