"""Celery tasks: an interface over triage.incidents, nothing more."""

from __future__ import annotations

from celery import shared_task

from triage.incidents import ALERTMANAGER, incident_walk_run


# No retry: incident_walk_run never raises for a failing walk (it records why in the
# timeline), and a walk replayed minutes later would describe a different window.
@shared_task(name="triage.tasks.walk_incident", ignore_result=True)
def walk_incident(incident_id: int) -> None:
    incident_walk_run(incident_id, author=ALERTMANAGER)
