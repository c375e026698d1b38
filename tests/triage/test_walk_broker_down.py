"""A walk that cannot be queued (the broker is down) runs in the web process instead, and
the webhook still answers 200 for the incident it committed.

tests/drills/test_redis_outage.py shows this with a real Redis stopped under a real web
process and worker; this is the fast guard, with the publish failing as kombu fails it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from kombu.exceptions import OperationalError

from devtools.waiting import wait_until
from tests.triage.factories import TOKEN, a_fleet, a_payload, walk_substituted
from triage.models import Incident, WalkRecord
from triage.tasks import walk_incident


def broker_down(*args: object, **kwargs: object) -> None:
    raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


@pytest.mark.django_db(transaction=True)
def test_with_the_broker_down_the_alert_is_taken_and_walked_in_this_process(
    settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings.FLEETSCOPE_ALERTMANAGER_TOKEN = TOKEN
    settings.FLEETSCOPE_INPROCESS_SCHEDULER = False  # production: walks go to Celery
    walk_substituted(monkeypatch)
    monkeypatch.setattr(walk_incident, "delay", broker_down)
    a_fleet()
    response = Client().post(
        "/incidents/alertmanager/", a_payload(), content_type="application/json",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )  # fmt: skip
    assert response.status_code == 200, response.content[:300]
    assert response.json()["opened"] == 1
    incident = Incident.objects.get()
    wait_until(
        lambda: WalkRecord.objects.filter(incident=incident).exists() or None,
        timeout=10,
        what="the walk in this process",
    )
    assert f"walk of incident {incident.pk} not queued" in caplog.text
