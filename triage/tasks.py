"""Celery tasks: an interface over triage.incidents, nothing more."""

from __future__ import annotations

from celery import Task, shared_task

from triage.incidents import incident_walk_delivered


# No retry: the walk never raises for a failing walk (it records why in the timeline),
# and a walk replayed minutes later would describe a different window. A delivery again
# after its worker process died is counted and bounded (incident_walk_delivered).
@shared_task(bind=True, name="triage.tasks.walk_incident", ignore_result=True)
def walk_incident(self: Task, incident_id: int) -> None:
    incident_walk_delivered(incident_id, self.request.id)
