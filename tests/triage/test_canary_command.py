"""`manage.py canary_evaluate`: a canary against its control on one objective, read only;
exit 2 for bad arguments."""

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
from inventory.models import Fleet
from tests.triage.walk.scenario_walks import history_of, incident_window


def run(*args: str) -> str:
    out = StringIO()
    call_command("canary_evaluate", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def throttled(settings: Any, tmp_path: Path, db: None) -> History:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of("gpu-throttle", seed=0)
    history.write_openmetrics(tmp_path / "fleet.om")
    history_import(fleet_slug="gpus", path=tmp_path / "fleet.om")
    return history


def test_the_healthy_peer_against_the_throttled_replica_has_recovered(throttled: History) -> None:
    manifest = throttled.manifest
    (affected,) = manifest["affected_replicas"]
    model, bad = affected["model_name"], affected["instances"]["vllm"]
    peer = next(
        r["instances"]["vllm"]
        for r in manifest["replicas"]
        if r["model_name"] == model and r["index"] != affected["index"]
    )
    at, since = incident_window(manifest, throttled)
    found = json.loads(
        run(
            "gpus",
            "--canary",
            peer,
            "--control",
            bad,
            "--objective",
            "itl:0.025:0.95",
            "--model",
            model,
            "--at",
            at.isoformat(),
            "--since",
            f"{int(since.total_seconds())}s",
            "--json",
        )
    )
    assert found["answer"] == "recovered"
    assert found["next_step"].startswith("Document the evidence")
    assert found["canary"]["instances"] == [peer]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--objective", "latency:1"), "is not KIND:THRESHOLD_SECONDS:TARGET"),
        (("--objective", "ttft:2.5:1.5"), "target must be within"),
        (("--objective", "ttft:2.5:0.95", "--since", "x"), "--since: not a duration"),
        (("--objective", "ttft:2.5:0.95", "--canary", "a:1", "--control", "a:1"), "both"),
    ],
)
def test_bad_arguments_exit_2(args: tuple[str, ...], message: str) -> None:
    Fleet.objects.get_or_create(slug="gpus", defaults={"name": "gpus"})
    base = {"--canary": "c:1", "--control": "d:1"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        base[flag] = value
    flat = [part for pair in base.items() for part in pair]
    with pytest.raises(CommandError, match=message) as raised:
        run("gpus", *flat)
    assert raised.value.returncode == 2
