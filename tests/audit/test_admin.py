"""The trail in the admin: visible to staff, and never added, edited or deleted there."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from audit.models import AuditEntry
from inventory.models import Fleet

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="root-password-1"))
    return client


def test_the_admin_lists_and_shows_entries_but_refuses_every_write(
    superuser_client: Client,
) -> None:
    # Module fixtures elsewhere may have created fleets (and their entries) on this worker:
    # this test reads only its own fleet's.
    Fleet.objects.create(slug="audited-admin", name="Production")
    entry = AuditEntry.objects.get(object_type="fleet", fleet_slug="audited-admin")
    listing = superuser_client.get("/admin/audit/auditentry/")
    assert listing.status_code == 200 and "Production" in listing.content.decode()
    shown = superuser_client.get(f"/admin/audit/auditentry/{entry.pk}/change/")
    assert shown.status_code == 200 and 'name="_save"' not in shown.content.decode()
    assert superuser_client.get("/admin/audit/auditentry/add/").status_code == 403
    edit = superuser_client.post(f"/admin/audit/auditentry/{entry.pk}/change/", {"actor": "x"})
    assert edit.status_code == 403
    delete = superuser_client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"})
    assert delete.status_code == 403
    action = superuser_client.post(
        "/admin/audit/auditentry/",
        {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"},
    )
    assert action.status_code in (200, 302)
    assert AuditEntry.objects.filter(pk=entry.pk, actor=entry.actor).exists()
