"""The incident services: opening, notes, status changes, stored walks, and the walk queued
after commit (in the embedded thread and through the Celery task)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from slo.models import Slo
from tests.triage.factories import a_fleet, a_walk, an_incident, walk_substituted
from triage import incidents
from triage.incidents import (
    IncidentError,
    incident_acknowledge,
    incident_note,
    incident_reopen,
    incident_resolve,
    incident_walk_enqueue,
    incident_walk_record,
    incident_walk_run,
    walk_since,
)
from triage.models import EventKind, IncidentStatus, WalkRecord
from triage.tasks import walk_incident

Capture = Callable[..., Any]


def test_opening_an_incident_writes_the_first_line_of_its_timeline(db: None) -> None:
    incident = an_incident(a_fleet(), owner="ana", author="ana")
    assert incident.status == IncidentStatus.OPEN and incident.owner == "ana"
    event = incident.events.get()
    assert (event.kind, event.author, event.text) == ("status", "ana", "Opened by hand.")


def test_an_slo_of_another_fleet_is_refused(db: None) -> None:
    other = Slo.objects.create(fleet=a_fleet("staging"), slug="chat", name="Chat")
    with pytest.raises(ValidationError, match="belongs to fleet staging"):
        an_incident(a_fleet("prod"), slo=other)


def test_an_empty_note_is_refused_and_a_note_is_kept_as_written(db: None) -> None:
    incident = an_incident(a_fleet())
    with pytest.raises(IncidentError, match="needs some text"):
        incident_note(incident=incident, author="ana", text="   ")
    note = incident_note(incident=incident, author="ana", text=" restarted 10.0.0.2 ")
    assert (note.kind, note.text) == (EventKind.NOTE, "restarted 10.0.0.2")


def test_acknowledging_names_an_owner_and_resolving_stamps_the_time(db: None) -> None:
    incident = an_incident(a_fleet())
    incident_acknowledge(incident=incident, author="ana")
    assert (incident.status, incident.owner) == (IncidentStatus.ACKNOWLEDGED, "ana")
    at = datetime(2026, 11, 18, 11, 30, tzinfo=UTC)
    incident_resolve(incident=incident, author="ana", resolved_at=at)
    incident.refresh_from_db()
    assert (incident.status, incident.resolved_at) == (IncidentStatus.RESOLVED, at)
    with pytest.raises(IncidentError, match="already resolved"):
        incident_resolve(incident=incident, author="ana")
    incident_reopen(incident=incident, author="ana")
    assert incident.resolved_at is None and incident.status == IncidentStatus.OPEN
    kinds = list(incident.events.values_list("kind", flat=True))
    assert kinds == ["status"] * 4


def test_a_stored_walk_is_the_walk_contract_and_links_the_supported_leafs_runbook(
    db: None,
) -> None:
    incident = an_incident(a_fleet())
    walk = a_walk()
    record = incident_walk_record(incident, walk)
    assert record.walk == walk.to_dict()
    incident.refresh_from_db()
    assert incident.runbook is not None and incident.runbook.slug == "ttft-queue-kv_capacity"
    event = incident.events.get(kind=EventKind.WALK)
    assert event.walk_record == record
    assert event.text == "Walked the tree: ttft.queue.kv_capacity."


def test_a_walk_without_a_supported_leaf_links_no_runbook(db: None) -> None:
    incident = an_incident(a_fleet())
    incident_walk_record(incident, a_walk(supported=False))
    incident.refresh_from_db()
    assert incident.runbook is None
    assert incident.events.get(kind="walk").text == "Walked the tree: no supported cause."


def test_a_gap_in_a_walk_is_stored_as_null_not_lost(db: None) -> None:
    walk = a_walk(canary={"text": "x", "series": [1.0, float("nan"), float("inf")]})
    record = incident_walk_record(an_incident(a_fleet()), walk)
    record.refresh_from_db()
    assert record.walk["canary"]["series"] == [1.0, None, None]


def test_running_the_walk_passes_the_fleet_slo_window_and_backend(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_walk = walk_substituted(monkeypatch)
    started = datetime.now(UTC) - timedelta(hours=2)
    incident = an_incident(a_fleet(), started_at=started)
    record = incident_walk_run(incident.pk, author="ana")
    assert record is not None and record.walk["fleet"] == "prod"
    (call,) = fake_walk
    assert (call["fleet"], call["slo"], call["backend"]) == ("prod", None, "local")
    assert timedelta(hours=2) <= call["since"] < timedelta(hours=2, minutes=5)


def test_a_walk_that_fails_leaves_a_line_saying_why(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Prometheus unavailable")

    monkeypatch.setattr(incidents, "walk_function", lambda: broken)
    incident = an_incident(a_fleet())
    assert incident_walk_run(incident.pk) is None
    event = incident.events.get(kind="walk")
    assert event.text == "The walk could not run: RuntimeError: Prometheus unavailable"
    assert not WalkRecord.objects.exists()


def test_the_walk_reads_the_breach_within_bounds(db: None) -> None:
    now = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)
    incident = an_incident(a_fleet())
    assert walk_since(incident, now) == timedelta(minutes=30)
    incident.started_at = now - timedelta(minutes=5)
    assert walk_since(incident, now) == timedelta(minutes=30)
    incident.started_at = now - timedelta(days=2)
    assert walk_since(incident, now) == timedelta(hours=6)


def test_the_walk_is_queued_only_when_the_incident_commits(
    db: None, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        incident_walk_enqueue(an_incident(a_fleet()))
    assert len(callbacks) == 1
    with django_capture_on_commit_callbacks() as callbacks:
        try:
            with transaction.atomic():
                incident_walk_enqueue(an_incident(a_fleet("staging")))
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
    assert callbacks == []


@pytest.fixture
def eager_celery() -> Iterator[None]:
    conf = walk_incident.app.conf
    before = conf.task_always_eager
    conf.task_always_eager = True  # one smoke test of the task path, not a global setting
    yield
    conf.task_always_eager = before


def test_in_production_the_celery_task_walks_the_incident(
    db: None,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    eager_celery: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    walk_substituted(monkeypatch)
    settings.FLEETSCOPE_INPROCESS_SCHEDULER = False
    with django_capture_on_commit_callbacks(execute=True):
        incident = an_incident(a_fleet())
        incident_walk_enqueue(incident)
    assert WalkRecord.objects.filter(incident=incident).count() == 1
    assert incident.events.get(kind="walk").author == "alertmanager"


def test_calling_the_task_walks_the_incident_and_a_deleted_one_is_skipped(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_walk = walk_substituted(monkeypatch)
    incident = an_incident(a_fleet())
    incident_id = incident.pk
    walk_incident(incident_id)
    assert incident.walks.count() == 1
    incident.delete()
    walk_incident(incident_id)
    assert len(fake_walk) == 1


class WorkerProcessDied(BaseException):
    """Stands for the SIGKILL of a pool process mid-walk, which this test process could not
    survive; a real one is in tests/drills/test_worker_killed.py. Like a death, it leaves
    the walk unfinished and escapes incident_walk_run's handling of failed walks."""


def test_a_walk_whose_worker_dies_each_time_is_abandoned_after_three_deliveries(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    deliveries: list[int] = []

    def dying(fleet: Any, **kwargs: Any) -> Any:
        deliveries.append(1)
        raise WorkerProcessDied

    monkeypatch.setattr(incidents, "walk_function", lambda: dying)
    incident = an_incident(a_fleet())
    for _ in range(incidents.WALK_DELIVERIES_MAX):
        with pytest.raises(WorkerProcessDied):
            incidents.incident_walk_delivered(incident.pk, "task-7")
    # The fourth and later deliveries of that task walk nothing; the timeline says so once.
    assert incidents.incident_walk_delivered(incident.pk, "task-7") is None
    assert incidents.incident_walk_delivered(incident.pk, "task-7") is None
    assert len(deliveries) == incidents.WALK_DELIVERIES_MAX
    (line,) = incident.events.filter(kind=EventKind.WALK)
    assert line.text.startswith("The queued walk was abandoned: it was delivered 3 times (first")
    assert "its worker process died each time" in line.text
    assert not WalkRecord.objects.exists()
    # Another walk of the same incident (a new alert, a new task) is not held back.
    walk_substituted(monkeypatch)
    assert incidents.incident_walk_delivered(incident.pk, "task-8") is not None


def test_a_walk_delivered_again_after_it_ended_is_not_walked_twice(
    db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_walk = walk_substituted(monkeypatch)
    incident = an_incident(a_fleet())
    assert incidents.incident_walk_delivered(incident.pk, "task-9") is not None
    # The worker died after the walk was stored but before the broker had its ack.
    assert incidents.incident_walk_delivered(incident.pk, "task-9") is None
    assert len(fake_walk) == 1 and incident.walks.count() == 1


@pytest.mark.django_db(transaction=True)
def test_in_the_embedded_mode_a_thread_walks_the_incident_after_commit(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    walk_substituted(monkeypatch)
    settings.FLEETSCOPE_INPROCESS_SCHEDULER = True
    before = set(threading.enumerate())
    with transaction.atomic():
        incident = an_incident(a_fleet())
        incident_walk_enqueue(incident)
        assert not [t for t in threading.enumerate() if t.name == "fleetscope-walk"]
    for thread in set(threading.enumerate()) - before:
        if thread.name == "fleetscope-walk":
            thread.join()
    assert WalkRecord.objects.filter(incident=incident).count() == 1
