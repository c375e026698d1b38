"""Reading the trail for one fleet and window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from audit.models import AuditEntry
from audit.selectors import changes_between
from inventory.models import Fleet
from triage.models import Runbook

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)


def dated(entry_filter: dict[str, object], at: datetime) -> None:
    """Move entries to a known time, as if they had been recorded then."""
    AuditEntry.objects.filter(**entry_filter).update(at=at)


def test_a_fleets_window_holds_its_own_and_fleetless_changes_oldest_first() -> None:
    prod = Fleet.objects.create(slug="prod", name="Production")
    other = Fleet.objects.create(slug="other", name="Other")
    runbook = Runbook.objects.create(slug="gpu-fan-noise", title="Fans", body_markdown="x")
    prod.name = "Production fleet"
    prod.save()
    dated({"object_type": "fleet", "object_id": str(prod.pk), "action": "create"}, T0)
    dated(
        {"object_type": "fleet", "object_id": str(prod.pk), "action": "update"},
        T0 + timedelta(minutes=20),
    )
    dated({"object_type": "fleet", "object_id": str(other.pk)}, T0 + timedelta(minutes=5))
    dated({"object_type": "runbook", "object_id": str(runbook.pk)}, T0 + timedelta(minutes=10))

    found = changes_between(prod, T0 + timedelta(minutes=1), T0 + timedelta(minutes=20))
    assert [(e.object_type, e.action) for e in found] == [
        ("runbook", "create"),
        ("fleet", "update"),
    ]
    assert [e.action for e in changes_between(prod, T0, T0)] == ["create"]  # bounds included


def test_a_deleted_fleets_changes_belong_to_no_other_fleet() -> None:
    gone = Fleet.objects.create(slug="prod", name="Production")
    gone.delete()
    again = Fleet.objects.create(slug="prod", name="Production again")
    now = datetime.now(UTC)
    found = changes_between(again, now - timedelta(minutes=5), now + timedelta(minutes=5))
    assert [(e.object_id, e.action) for e in found] == [(str(again.pk), "create")]
