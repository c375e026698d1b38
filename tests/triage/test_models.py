"""The triage rows and the constraints the database enforces."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import Client
from django.utils import timezone

from tests.triage.factories import a_fleet, a_walk
from triage.models import Incident, IncidentEvent, IncidentStatus, Runbook, WalkRecord

pytestmark = pytest.mark.django_db


def test_a_runbook_needs_a_body_or_an_external_url() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Runbook.objects.create(slug="empty", title="Empty")
    Runbook.objects.create(slug="linked", title="Linked", external_url="https://wiki.example/x")
    Runbook.objects.create(slug="written", title="Written", body_markdown="# Signal")


def test_a_fingerprint_is_unique_per_fleet_but_not_across_fleets() -> None:
    prod, staging = a_fleet("prod"), a_fleet("staging")
    Incident.objects.create(fleet=prod, title="a", alert_fingerprint="abc")
    Incident.objects.create(fleet=staging, title="b", alert_fingerprint="abc")
    with pytest.raises(IntegrityError), transaction.atomic():
        Incident.objects.create(fleet=prod, title="c", alert_fingerprint="abc")


def test_incidents_without_a_fingerprint_never_collide() -> None:
    prod = a_fleet()
    Incident.objects.create(fleet=prod, title="by hand")
    Incident.objects.create(fleet=prod, title="by hand too")
    assert Incident.objects.filter(alert_fingerprint="").count() == 2


def test_resolved_at_is_set_exactly_when_the_incident_is_resolved() -> None:
    prod = a_fleet()
    with pytest.raises(IntegrityError), transaction.atomic():
        Incident.objects.create(fleet=prod, title="x", status=IncidentStatus.RESOLVED)
    with pytest.raises(IntegrityError), transaction.atomic():
        Incident.objects.create(fleet=prod, title="y", resolved_at=timezone.now())
    done = Incident(
        fleet=prod, title="z", status=IncidentStatus.RESOLVED, resolved_at=timezone.now()
    )
    done.full_clean()
    done.save()


def test_full_clean_reports_the_constraint_in_words() -> None:
    incident = Incident(fleet=a_fleet(), title="x", status=IncidentStatus.RESOLVED)
    with pytest.raises(ValidationError, match="resolved_at is set exactly when"):
        incident.full_clean()


def test_each_status_has_its_badge_and_resolved_is_muted() -> None:
    prod = a_fleet()
    assert Incident(fleet=prod, title="x").status_badge == "badge-bad"
    acknowledged = Incident(fleet=prod, title="x", status=IncidentStatus.ACKNOWLEDGED)
    assert acknowledged.status_badge == "badge-warning"
    resolved = Incident(fleet=prod, title="x", status=IncidentStatus.RESOLVED)
    assert resolved.status_badge == "badge-muted" and resolved.is_resolved


def test_the_admin_lists_and_opens_runbooks_incidents_and_read_only_walks(
    admin_client: Client,
) -> None:
    incident = Incident.objects.create(fleet=a_fleet(), title="x")
    record = WalkRecord.objects.create(incident=incident, walk=a_walk().to_dict())
    IncidentEvent.objects.create(incident=incident, kind="note", text="hello")
    for path in (
        "/admin/triage/runbook/",
        "/admin/triage/runbook/add/",
        "/admin/triage/incident/",
        f"/admin/triage/incident/{incident.pk}/change/",
        "/admin/triage/walkrecord/",
        f"/admin/triage/walkrecord/{record.pk}/change/",
    ):
        assert admin_client.get(path).status_code == 200, path
    assert admin_client.get("/admin/triage/walkrecord/add/").status_code == 403
