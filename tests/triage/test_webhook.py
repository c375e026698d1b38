"""POST /incidents/alertmanager/: the token, clear 400s, idempotent replays, resolution, and
a batch that is written whole or not at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from slo.models import Slo
from tests.triage.factories import TOKEN, a_fleet, a_payload, an_alert
from triage.models import EventKind, Incident, IncidentEvent, IncidentStatus

URL = "/incidents/alertmanager/"
Capture = Callable[..., Any]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def token(settings: Any) -> str:
    settings.FLEETSCOPE_ALERTMANAGER_TOKEN = TOKEN
    return TOKEN


@pytest.fixture
def am() -> Client:
    """Alertmanager: no session, and CSRF checks enforced as for any browser."""
    return Client(enforce_csrf_checks=True)


def post(client: Client, body: bytes, token: str | None = TOKEN) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return client.post(URL, body, content_type="application/json", headers=headers)


def test_without_a_configured_token_the_webhook_is_off_and_says_how_to_turn_it_on(
    am: Client, settings: Any
) -> None:
    settings.FLEETSCOPE_ALERTMANAGER_TOKEN = ""
    response = post(am, a_payload())
    assert response.status_code == 503
    assert "FLEETSCOPE_ALERTMANAGER_TOKEN" in response.json()["error"]


def test_a_missing_or_wrong_token_is_401_and_writes_nothing(am: Client) -> None:
    a_fleet()
    for token in (None, "wrong-token-0123456789", ""):
        response = post(am, a_payload(), token=token)
        assert response.status_code == 401, token
        assert response["WWW-Authenticate"].startswith("Bearer")
    basic = am.post(URL, a_payload(), content_type="application/json", headers={
        "Authorization": f"Basic {TOKEN}"})  # fmt: skip
    assert basic.status_code == 401
    assert not Incident.objects.exists()


def test_only_post_is_answered(am: Client) -> None:
    assert am.get(URL, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 405


def test_malformed_json_is_a_400_that_says_so(am: Client) -> None:
    response = post(am, b'{"version": "4", "alerts": [')
    assert response.status_code == 400
    assert response.json()["error"].startswith("the body is not JSON")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"[]", "the payload must be a JSON object (Alertmanager webhook v4)"),
        (b'{"alerts": []}', 'version must be "4" (Alertmanager webhook payload v4), got None'),
        (b'{"version": "4", "alerts": {}}', "alerts must be a list of alert objects"),
        (a_payload(an_alert(), {**an_alert(), "labels": "fleet=prod"}),
         "alerts[1].labels must be an object of string values"),
        (a_payload({**an_alert(), "status": "pending"}),
         "alerts[0].status must be \"firing\" or \"resolved\", got 'pending'"),
        (a_payload({**an_alert(), "startsAt": "yesterday"}),
         "alerts[0].startsAt must be an RFC 3339 time with a zone, got 'yesterday'"),
        (a_payload({**an_alert(), "fingerprint": ""}),
         "alerts[0].fingerprint must be a non-empty string of at most 64 characters"),
        (a_payload({**an_alert(), "labels": {"alertname": "X"}}),
         "alerts[0] has no fleet: add the label fleet (or fleetscope_fleet)"),
        (a_payload(an_alert(fleet="nowhere")),
         "alerts[0]: no fleet 'nowhere' in FleetScope (from its fleet label)"),
    ],
)  # fmt: skip
def test_a_payload_of_the_wrong_shape_is_a_400_naming_the_field(
    am: Client, payload: bytes, message: str
) -> None:
    a_fleet()
    response = post(am, payload)
    assert response.status_code == 400
    assert response.json()["error"].startswith(message)
    assert not Incident.objects.exists()


def test_a_firing_alert_opens_an_incident_and_queues_its_walk_after_commit(
    am: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    fleet = a_fleet()
    slo = Slo.objects.create(fleet=fleet, slug="chat", name="Chat")
    with django_capture_on_commit_callbacks() as queued:
        response = post(am, a_payload(an_alert(slo="chat")))
    assert response.status_code == 200
    body = response.json()
    assert (body["opened"], body["alerts"][0]["outcome"]) == (1, "opened")
    incident = Incident.objects.get()
    assert body["alerts"][0]["incident"] == incident.pk
    assert (incident.source, incident.severity, incident.slo) == ("alertmanager", "critical", slo)
    assert incident.title == "Chat latency: TTFT burning fast"
    assert incident.started_at == datetime(2026, 11, 18, 10, 42, tzinfo=UTC)
    assert incident.alert_labels["alertname"] == "SloFastBurn"
    assert len(queued) == 1


def test_a_replayed_payload_changes_nothing(
    am: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    a_fleet()
    post(am, a_payload())
    events = IncidentEvent.objects.count()
    with django_capture_on_commit_callbacks() as queued:
        response = post(am, a_payload())
    assert response.json()["ignored"] == 1
    assert Incident.objects.count() == 1 and IncidentEvent.objects.count() == events
    assert queued == []


def test_new_annotations_update_the_incident_with_a_timeline_line(am: Client) -> None:
    a_fleet()
    post(am, a_payload())
    changed = an_alert()
    changed["annotations"]["description"] = "now 14x the budgeted rate"
    assert post(am, a_payload(changed)).json()["updated"] == 1
    incident = Incident.objects.get()
    assert incident.alert_annotations["description"] == "now 14x the budgeted rate"
    assert incident.events.filter(kind=EventKind.ALERT).count() == 1


def test_a_resolved_alert_resolves_its_incident_at_the_alerts_end(am: Client) -> None:
    a_fleet()
    post(am, a_payload())
    resolved = an_alert(status="resolved", ends_at="2026-11-18T11:20:00.123456789Z")
    assert post(am, a_payload(resolved)).json()["resolved"] == 1
    incident = Incident.objects.get()
    assert incident.status == IncidentStatus.RESOLVED
    assert incident.resolved_at == datetime(2026, 11, 18, 11, 20, 0, 123456, tzinfo=UTC)
    assert post(am, a_payload(resolved)).json()["ignored"] == 1  # replayed: nothing new


def test_a_late_replay_of_the_firing_alert_does_not_reopen_it_but_a_new_firing_does(
    am: Client,
) -> None:
    a_fleet()
    post(am, a_payload())
    post(am, a_payload(an_alert(status="resolved", ends_at="2026-11-18T11:20:00Z")))
    assert post(am, a_payload()).json()["ignored"] == 1
    assert Incident.objects.get().status == IncidentStatus.RESOLVED
    again = an_alert(starts_at="2026-11-18T13:00:00Z")
    assert post(am, a_payload(again)).json()["opened"] == 1
    incident = Incident.objects.get()
    assert incident.status == IncidentStatus.OPEN and incident.resolved_at is None
    assert incident.started_at == datetime(2026, 11, 18, 13, 0, tzinfo=UTC)


def test_a_resolved_alert_never_seen_firing_is_ignored(am: Client) -> None:
    a_fleet()
    response = post(am, a_payload(an_alert(status="resolved", ends_at="2026-11-18T11:00:00Z")))
    assert response.json()["ignored"] == 1 and not Incident.objects.exists()


def test_a_batch_with_one_bad_alert_writes_nothing_at_all(am: Client) -> None:
    a_fleet()
    batch = a_payload(an_alert(fingerprint="aaaa"), an_alert(fingerprint="bbbb", fleet="nowhere"))
    assert post(am, batch).status_code == 400
    assert not Incident.objects.exists() and not IncidentEvent.objects.exists()
    # The same batch with the second alert on a real fleet goes in whole.
    a_fleet("nowhere")
    assert post(am, batch).json()["opened"] == 2


def test_the_fleet_can_come_from_fleetscope_fleet_or_the_common_labels(am: Client) -> None:
    a_fleet("prod")
    a_fleet("edge")
    named = an_alert(fingerprint="cccc", fleetscope_fleet="edge")
    common = an_alert(fingerprint="dddd")
    del common["labels"]["fleet"]
    payload = json.loads(a_payload(named, common))
    payload["commonLabels"] = {"fleet": "prod"}
    assert post(am, json.dumps(payload).encode()).json()["opened"] == 2
    assert Incident.objects.get(alert_fingerprint="cccc").fleet.slug == "edge"
    assert Incident.objects.get(alert_fingerprint="dddd").fleet.slug == "prod"
