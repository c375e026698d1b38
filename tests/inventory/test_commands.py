from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from fleetsim.targets import file_sd
from inventory.models import Endpoint, Fleet


def run(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def sim() -> Iterator[SimFleet]:
    with start_fleet(replicas=1, scenario="steady", seed=11) as running:
        yield running


def test_parse_exposition_prints_families_as_json_with_nan_as_text(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text('# TYPE g gauge\ng NaN\ng{a="1"} +Inf\n')
    code, out, _ = run("parse_exposition", str(path), "--json")
    assert code == 0
    (family,) = json.loads(out)
    assert [s["value"] for s in family["samples"]] == ["NaN", "+Inf"]


def test_parse_exposition_reports_the_bad_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "m.txt"
    path.write_text("ok 1\nx{tenant=} 5\n")
    code, out, err = run("parse_exposition", str(path))
    assert code == 2
    assert out == ""
    assert err.startswith("line 2: ")


def test_scrape_command_prints_the_inventory_of_a_live_replica(sim: SimFleet) -> None:
    url = next(t.url for t in sim.targets if t.kind == "vllm")
    code, out, _ = run("scrape", url, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["dialect"] == "current"
    assert report["kind"] == "engine"
    assert report["families"]["vllm:kv_cache_usage_perc"]["type"] == "gauge"


def test_scrape_command_exits_non_zero_with_the_specific_error(closed_port: int) -> None:
    code, _, err = run("scrape", f"http://127.0.0.1:{closed_port}/metrics")
    assert code == 1
    assert err.strip().endswith("refused: connection refused")


@pytest.mark.django_db
def test_import_targets_registers_a_fleetsim_file_sd(sim: SimFleet, tmp_path: Path) -> None:
    path = tmp_path / "targets.json"
    path.write_text(json.dumps(file_sd(sim.targets)))
    code, out, _ = run("import_targets", str(path), "--fleet", "demo")
    assert code == 0, out
    assert Endpoint.objects.filter(fleet__slug="demo").count() == len(sim.targets)
    assert set(Endpoint.objects.values_list("kind", flat=True)) == {t.kind for t in sim.targets}
    assert f"{len(sim.targets)} endpoints added" in out


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://10.0.0.8:8000/metrics",
        "http://user:pass@127.0.0.1/metrics",
        "file:///etc/passwd",
    ],
)
def test_import_targets_refuses_blocked_urls_and_writes_nothing(url: str, tmp_path: Path) -> None:
    path = tmp_path / "targets.json"
    entries = [{"url": "http://127.0.0.1:9100/metrics"}, {"url": url}]
    path.write_text(json.dumps({"endpoints": entries}))
    code, _, err = run("import_targets", str(path), "--fleet", "bad")
    assert code == 2
    assert "blocked by policy" in err
    assert not Fleet.objects.exists()
    assert not Endpoint.objects.exists()


@pytest.mark.django_db
def test_import_targets_rejects_a_malformed_file_naming_the_place(tmp_path: Path) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text("- targets: [a:1]\n- labels: {}\n")
    code, _, err = run("import_targets", str(path), "--fleet", "x")
    assert code == 2
    assert "group 2: needs a 'targets' list" in err
    assert not Fleet.objects.exists()
