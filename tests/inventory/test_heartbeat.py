from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from inventory.heartbeat import heartbeat_age_seconds, record_heartbeat
from inventory.models import JobHeartbeat
from inventory.tasks import record_heartbeat as record_heartbeat_task

T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_heartbeat_age_is_none_before_the_first_run() -> None:
    assert heartbeat_age_seconds(now=T0) is None


@pytest.mark.django_db
def test_heartbeat_counts_runs_and_reports_age() -> None:
    record_heartbeat(now=T0)
    record_heartbeat(now=T0 + timedelta(seconds=15))
    assert JobHeartbeat.objects.get().runs == 2
    assert heartbeat_age_seconds(now=T0 + timedelta(seconds=45)) == 30.0


@pytest.mark.django_db
def test_heartbeat_task_calls_the_service() -> None:
    record_heartbeat_task()
    assert JobHeartbeat.objects.get().runs == 1
