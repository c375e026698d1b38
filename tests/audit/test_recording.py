"""What the trail records, from the paths people and tools really take: the admin, the
registration service, a management command, a plain save or delete."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client, RequestFactory

from audit import recording
from audit.actor import acting_as, current_actor
from audit.models import AuditEntry
from audit.tracked import Tracked
from inventory.models import Endpoint, Fleet
from inventory.registration import targets_import
from inventory.targets import TargetSpec
from slo.models import Objective, Slo
from triage.models import Runbook

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("alice", password="alice-password-1"))
    return client


def an_slo(fleet: Fleet, threshold: float = 2.5) -> Slo:
    slo = Slo.objects.create(fleet=fleet, slug="chat-latency", name="Chat latency")
    Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=threshold, target=0.99)
    return slo


def admin_change_data(slo: Slo, threshold: str, **given: str) -> dict[str, Any]:
    """The SLO's change form as the admin renders it, with the threshold typed in."""
    objective = slo.objectives.get()
    return {
        "fleet": str(slo.fleet_id),
        "name": slo.name,
        "slug": slo.slug,
        "window_days": str(slo.window_days),
        "bad_finish_reasons": list(slo.bad_finish_reasons),
        "min_requests_to_page": str(slo.min_requests_to_page),
        "min_bad_events": str(slo.min_bad_events),
        "objectives-TOTAL_FORMS": "1",
        "objectives-INITIAL_FORMS": "1",
        "objectives-MIN_NUM_FORMS": "0",
        "objectives-MAX_NUM_FORMS": "1000",
        "objectives-0-id": str(objective.pk),
        "objectives-0-slo": str(slo.pk),
        "objectives-0-kind": objective.kind,
        "objectives-0-threshold_seconds": threshold,
        "objectives-0-target": str(objective.target),
    } | given


def entries_of(object_type: str, object_id: object) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(object_type=object_type, object_id=str(object_id)))


def test_an_objective_threshold_changed_in_the_admin_records_who_when_from_and_to(
    admin_client: Client, fleet: Fleet
) -> None:
    slo = an_slo(fleet)
    objective = slo.objectives.get()
    before = datetime.now(UTC)
    response = admin_client.post(
        f"/admin/slo/slo/{slo.pk}/change/", admin_change_data(slo, threshold="1.5")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    [entry] = entries_of("slo_objective", objective.pk)[1:]  # the first is its creation
    assert (entry.actor, entry.action) == ("alice", "update")
    assert entry.changes == {"threshold_seconds": [2.5, 1.5]}
    assert before <= entry.at <= datetime.now(UTC)
    assert (entry.fleet, entry.fleet_slug) == (fleet, "prod")
    assert entry.object_text == "prod/chat-latency objective ttft"
    # The SLO row was saved too, but only its updated_at moved: no entry for it.
    assert [e.action for e in entries_of("slo", slo.pk)] == ["create"]


def test_a_save_that_changes_nothing_records_nothing(admin_client: Client, fleet: Fleet) -> None:
    slo = an_slo(fleet)
    count = AuditEntry.objects.count()
    response = admin_client.post(
        f"/admin/slo/slo/{slo.pk}/change/", admin_change_data(slo, threshold="2.5")
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    slo.refresh_from_db()
    slo.save()
    for endpoint in Endpoint.objects.filter(fleet=fleet):
        endpoint.save()
    fleet.save()
    assert AuditEntry.objects.count() == count


def test_a_change_rolled_back_leaves_no_entry(fleet: Fleet) -> None:
    slo = an_slo(fleet)
    count = AuditEntry.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        slo.name = "Renamed"
        slo.save()
        assert AuditEntry.objects.count() == count + 1  # written with the change...
        raise RuntimeError("the caller gives up")
    assert AuditEntry.objects.count() == count  # ...and gone with it
    assert Slo.objects.get().name == "Chat latency"


def test_deleting_a_runbook_records_its_last_values() -> None:
    runbook = Runbook.objects.create(
        slug="gpu-fan-noise", title="Fans spin up", owner_team="serving", body_markdown="Scale."
    )
    runbook_id = runbook.pk
    runbook.delete()
    [created, deleted] = entries_of("runbook", runbook_id)
    assert (created.action, deleted.action, deleted.actor) == ("create", "delete", "system")
    assert (deleted.object_text, deleted.fleet, deleted.fleet_slug) == ("gpu-fan-noise", None, "")
    assert deleted.changes == {
        "slug": ["gpu-fan-noise", None],
        "title": ["Fans spin up", None],
        "owner_team": ["serving", None],
        "escalation": ["", None],
        "body_markdown": ["Scale.", None],
        "external_url": ["", None],
    }


def test_an_endpoint_registered_by_the_service_without_a_request_is_the_systems() -> None:
    spec = TargetSpec("http://127.0.0.1:9400/metrics", "vllm", {"model": "llama"})
    report = targets_import(fleet_slug="edge", specs=[spec])
    endpoint = Endpoint.objects.get(fleet=report.fleet)
    [entry] = entries_of("endpoint", endpoint.pk)
    assert (entry.actor, entry.action, entry.fleet_slug) == ("system", "create", "edge")
    assert entry.changes["url"] == [None, "http://127.0.0.1:9400/metrics"]
    assert entry.changes["labels"] == [None, {"model": "llama"}]
    assert entry.changes["fleet"] == [None, "edge"]
    # Registering the same list again changes nothing, and records nothing.
    targets_import(fleet_slug="edge", specs=[spec])
    assert len(entries_of("endpoint", endpoint.pk)) == 1


def test_an_endpoint_registered_by_a_command_is_the_commands(tmp_path: Path) -> None:
    targets = tmp_path / "targets.json"
    targets.write_text(
        json.dumps({"endpoints": [{"url": "http://127.0.0.1:9401/metrics", "kind": "vllm"}]})
    )
    call_command("import_targets", str(targets), "--fleet", "edge", stdout=io.StringIO())
    endpoint = Endpoint.objects.get(fleet__slug="edge")
    [entry] = entries_of("endpoint", endpoint.pk)
    assert entry.actor == "command:import_targets"
    assert entries_of("fleet", endpoint.fleet_id)[0].actor == "command:import_targets"
    assert current_actor() == "system"  # the command's name ends with it


def test_deleting_a_fleet_keeps_its_trail_by_slug(fleet: Fleet) -> None:
    an_slo(fleet)
    fleet_id = fleet.pk
    fleet.delete()
    # Entries written by the cascade point at no deleted row once the delete commits.
    connection.check_constraints()
    trail = AuditEntry.objects.filter(fleet_slug="prod")
    assert not trail.filter(fleet__isnull=False).exists()
    deleted = {e.object_type for e in trail.filter(action="delete")}
    assert deleted == {"fleet", "endpoint", "slo", "slo_objective"}
    assert trail.get(object_type="fleet", action="delete").object_id == str(fleet_id)


def test_a_secret_field_is_recorded_as_changed_never_by_value(fleet: Fleet) -> None:
    """No tracked model holds a secret today; one marked so (here, an endpoint's URL)
    shows that it changed and nothing of either value."""
    spec = Tracked("inventory.Endpoint", "endpoint", "endpoint", secret=frozenset({"url"}))
    endpoint = Endpoint.objects.filter(fleet=fleet).first()
    assert endpoint is not None
    old_url = endpoint.url
    endpoint.url = "http://127.0.0.1:9402/metrics"
    recording.before_save(spec, endpoint, "default")
    entry = recording.after_save(spec, endpoint, created=False, update_fields=None, using="default")
    assert entry is not None and entry.changes == {"url": ["(secret)", "changed"]}
    assert old_url not in json.dumps(entry.changes) and "9402" not in json.dumps(entry.changes)


def test_a_request_acts_as_its_signed_in_user_and_an_anonymous_one_as_the_system() -> None:
    request = RequestFactory().get("/")
    request.user = User.objects.create_user("bob")
    with acting_as(request):
        assert current_actor() == "bob"
    request.user = AnonymousUser()
    with acting_as(request):
        assert current_actor() == "system"
    assert current_actor() == "system"
