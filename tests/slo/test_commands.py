"""slo_preset, slo_import and slo_export from the command line."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory.models import Fleet
from slo.models import Slo

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def failure(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


def test_slo_preset_prints_the_objectives_and_window_it_created(fleet: Fleet) -> None:
    out = run("slo_preset", "prod", "chat", "--name", "Support bot")
    assert out.splitlines() == [
        "created prod/support-bot (Support bot), 28-day rolling window:",
        "  itl <= 0.05 s for 99% of token gaps",
        "  ttft <= 0.2 s for 99% of requests",
    ]
    assert Slo.objects.get().name == "Support bot"


def test_slo_preset_refuses_an_unknown_preset_or_fleet(fleet: Fleet) -> None:
    assert failure("slo_preset", "prod", "fast") == (
        "preset: unknown preset 'fast'; use chat, rag, code, content, batch"
    )
    assert failure("slo_preset", "nowhere", "chat") == "fleet: no fleet 'nowhere'"
    assert not Slo.objects.exists()


def test_slo_export_then_import_through_a_file(fleet: Fleet, tmp_path: Path) -> None:
    run("slo_preset", "prod", "chat")
    run("slo_preset", "prod", "batch")
    path = tmp_path / "slos.yaml"
    assert run("slo_export", "prod", "--output", str(path)) == f"wrote 2 SLOs to {path}\n"
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(path.read_text())] == [
        "batch",
        "chat",
    ]
    Slo.objects.all().delete()
    assert run("slo_import", str(path)).splitlines() == [
        "imported 2 SLOs:",
        "  prod/batch (Batch)",
        "  prod/chat (Chat)",
    ]


def test_slo_export_writes_yaml_to_stdout(fleet: Fleet) -> None:
    run("slo_preset", "prod", "rag")
    (document,) = yaml.safe_load_all(run("slo_export", "prod"))
    assert document["spec"]["objectives"][0]["value"] == 3.0


def test_slo_import_into_another_fleet(fleet: Fleet, old_fleet: Fleet, tmp_path: Path) -> None:
    run("slo_preset", "prod", "rag")
    path = tmp_path / "slos.yaml"
    run("slo_export", "prod", "--output", str(path))
    assert "legacy/rag" in run("slo_import", str(path), "--fleet", "legacy")
    assert Slo.objects.filter(fleet=old_fleet).count() == 1


def test_slo_import_of_a_bad_file_names_the_problem_and_imports_nothing(
    fleet: Fleet, tmp_path: Path
) -> None:
    run("slo_preset", "prod", "chat")
    path = tmp_path / "slos.yaml"
    run("slo_export", "prod", "--output", str(path))
    path.write_text(path.read_text() + "---\napiVersion: openslo/v1\nkind: SLI\n")
    Slo.objects.all().delete()
    assert failure("slo_import", str(path)) == (
        f"{path}: document 2: kind: 'SLI' documents are not imported; only kind: SLO; "
        "nothing was imported"
    )
    assert not Slo.objects.exists()


def test_slo_import_of_a_missing_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    assert failure("slo_import", str(path)) == f"{path}: cannot read: No such file or directory"
