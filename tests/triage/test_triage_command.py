"""`manage.py triage`: the walk as a tree for a terminal, the JSON contract, and exit 2
only for bad arguments."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from fleetsim.history import History
from inventory.history import history_import
from tests.triage.walk.scenario_walks import history_of, incident_window


@pytest.fixture
def imported(settings: Any, tmp_path: Path, db: None) -> History:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of("replica-down", seed=0)
    history.write_openmetrics(tmp_path / "fleet.om")
    history_import(fleet_slug="down", path=tmp_path / "fleet.om")
    return history


def run(*args: str) -> str:
    out = StringIO()
    call_command("triage", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_the_tree_with_the_supported_leaf_and_its_runbook(
    imported: History,
) -> None:
    at, since = incident_window(imported.manifest, imported)
    text = run("down", "--at", at.isoformat(), "--since", f"{int(since.total_seconds())}s")
    assert "[+] availability.replica_down" in text
    assert "runbook: /incidents/runbooks/availability-replica_down/" in text
    assert "supported: availability.replica_down" in text
    assert "(UTC)" in text


def test_the_json_walks_a_past_window_from_the_embedded_store(imported: History) -> None:
    at, since = incident_window(imported.manifest, imported)
    found = json.loads(
        run(
            "down",
            "--at",
            at.isoformat().replace("+00:00", "Z"),
            "--since",
            f"{int(since.total_seconds())}s",
            "--json",
        )
    )
    assert found["supported"] == ["availability.replica_down"]
    assert found["side"] == "availability"
    assert found["window"]["end"] == at.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nowhere",), "no fleet 'nowhere'"),
        (("down", "--since", "soon"), "--since: not a duration"),
        (("down", "--at", "yesterday"), "--at: not an ISO 8601 time"),
        (("down", "--at", "2026-01-01T00:00:00"), "--at: give a UTC offset"),
        (("down", "--at", "2999-01-01T00:00:00Z"), "is in the future"),
        (("down", "--slo", "latency"), "has no SLO 'latency'"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(args: tuple[str, ...], message: str) -> None:
    from inventory.models import Fleet

    Fleet.objects.get_or_create(slug="down", defaults={"name": "down"})
    with pytest.raises(CommandError, match=message) as raised:
        run(*args)
    assert raised.value.returncode == 2
