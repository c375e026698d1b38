"""Configuration changes from the audit trail in the walk's "what changed", and on the
incident page that shows the stored walk, as text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from audit.actor import acting_as
from audit.models import AuditEntry
from slo.models import Objective, Slo
from tests.triage.factories import HOSTILE, a_fleet, an_incident
from triage.incidents import incident_walk_record
from triage.walk import walk_fleet

pytestmark = pytest.mark.django_db

SINCE = timedelta(minutes=30)


def test_an_slo_changed_in_the_window_is_listed_under_configuration_and_shown_as_text(
    owner_client: Client,
) -> None:
    fleet = a_fleet()
    slo = Slo.objects.create(fleet=fleet, slug="chat-latency", name="Chat latency")
    objective = Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=2.5, target=0.99)
    with acting_as("alice"):
        objective.threshold_seconds = 1.5
        objective.save()
        slo.name = HOSTILE
        slo.save()
    # The SLO's creation, recorded before the walk's window, is not a change in it.
    at = datetime.now(UTC) + timedelta(seconds=1)
    AuditEntry.objects.filter(object_type="slo", action="create").update(at=at - 2 * SINCE)

    walk = walk_fleet(fleet, at=at, since=SINCE)

    configuration = [c for c in walk.changes if c.kind == "configuration"]
    texts = [c.description for c in configuration]
    assert "SLO prod/chat-latency objective ttft: threshold 2.5 -> 1.5 s, by alice" in texts
    assert f"SLO prod/chat-latency: name Chat latency -> {HOSTILE}, by alice" in texts
    assert not [t for t in texts if t.startswith("SLO prod/chat-latency: created")]
    assert all(c.at is not None and c.instance == "" for c in configuration)
    # The walk's JSON contract keeps its shape: a change is kind, at, instance, description.
    assert {tuple(sorted(c)) for c in walk.to_dict()["changes"]} == {
        ("at", "description", "instance", "kind")
    }

    incident = an_incident(fleet)
    incident_walk_record(incident, walk)
    page = owner_client.get(f"/incidents/{incident.pk}/").content.decode()
    assert (
        "configuration: SLO prod/chat-latency objective ttft: threshold 2.5 -&gt; 1.5 s, by alice"
        in page
    )
    assert "name Chat latency -&gt; &lt;script&gt;alert(1)&lt;/script&gt;, by alice" in page
    assert HOSTILE not in page
