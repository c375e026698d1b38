"""`manage.py blindspots`: counts by verdict, then each item with its verdict, why, since
when and rewrite; exit status 1 when anything is blind or partly blind (for CI), 0 when
not; a bad path or an unknown fleet is a CommandError naming the flag."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from blindspots.models import AuditRun
from inventory.models import Fleet
from tests.blindspots.audit_fleets import (
    DASHBOARD,
    REPLICAS,
    RULES,
    SCALEDOBJECT,
    skewed_fleet,
    steady_fleet,
)

pytestmark = pytest.mark.django_db

LIVE_RULES = """\
groups:
  - name: live
    rules:
      - alert: Busy
        expr: sum(vllm:num_requests_running) > 100
      - record: fleet:kv:max
        expr: max(vllm:kv_cache_usage_perc)
"""


@pytest.fixture
def steady(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return steady_fleet(tmp_path_factory)


def run(*args: str) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("blindspots", *args, stdout=out)
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_blind_items_print_verdict_why_since_and_rewrite_and_exit_1(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    skewed_fleet(tmp_path_factory)
    status, out = run(
        "skewed",
        "--rules",
        str(RULES),
        "--dashboards",
        str(DASHBOARD),
        "--autoscalers",
        str(SCALEDOBJECT),
    )
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith("blind spots of skewed, audited ")
    assert lines[1].startswith("blind: ") and "partly blind: " in lines[1]
    assert lines[1].endswith("errors: 3")
    text = out.split("[partly blind] rule 'QueueByReason'")[1].split("\n\n")[0]
    assert f"missing on {REPLICAS[0]}" in text
    assert "  since: " in text and " UTC" in text
    # Counts first, then the items worst first.
    assert out.index("[blind]") < out.index("[partly blind]") < out.index("[live]")
    assert "-vllm:gpu_cache_usage_perc > 0.9" in out
    assert "could not be audited:" in out and "BrokenRule" in out
    assert AuditRun.objects.filter(fleet__slug="skewed").count() == 1


def test_nothing_blind_exits_0_and_json_is_the_report(steady: Fleet, tmp_path: Path) -> None:
    rules = tmp_path / "live.yml"
    rules.write_text(LIVE_RULES)
    status, out = run("steady", "--rules", str(rules))
    assert status == 0, out
    assert "blind: 0  partly blind: 0" in out
    status, out = run("steady", "--rules", str(rules), "--json")
    assert status == 0
    data = json.loads(out)
    assert data["counts"]["live"] == 2 and data["fleet"] == "steady"
    status, out = run("steady", "--rules", str(RULES), "--json")
    assert status == 1 and json.loads(out)["counts"]["blind"] >= 1


def test_bad_paths_and_an_unknown_fleet_name_the_flag(steady: Fleet, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="FLEET: no fleet 'nowhere'"):
        run("nowhere")
    with pytest.raises(CommandError, match="--rules: no such file or folder: missing.yml"):
        run("steady", "--rules", "missing.yml")
    with pytest.raises(CommandError, match="--dashboards: no .json, .yml, .yaml file under"):
        run("steady", "--dashboards", str(tmp_path))
    with pytest.raises(CommandError, match="--autoscalers: no such file"):
        run("steady", "--autoscalers", str(tmp_path / "nope"))
    with (
        override_settings(PROMETHEUS_URL=None),
        pytest.raises(CommandError, match="--prometheus-rules: PROMETHEUS_URL is not set"),
    ):
        run("steady", "--prometheus-rules")
    assert not AuditRun.objects.exists()


def test_a_malformed_file_is_one_error_and_the_rest_is_still_audited(
    steady: Fleet, tmp_path: Path
) -> None:
    (tmp_path / "broken.json").write_text('{"panels": [')
    (tmp_path / "good.json").write_bytes(DASHBOARD.read_bytes())
    status, out = run("steady", "--dashboards", str(tmp_path))
    assert status == 1
    assert "file 'broken.json'" in out
    assert "[live] panel 'Requests running'" in out
    assert "Traceback" not in out
