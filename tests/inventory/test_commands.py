from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import override_settings

from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from fleetsim.targets import file_sd
from inventory.models import Endpoint, Fleet, PrometheusSource
from tests.inventory.badservers import Responder, html_error_page, json_answer, serving
from tests.inventory.promfleet import PrometheusOverFleet, prometheus_over_fleet


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


def test_scrape_command_refusal_names_the_setting_that_would_allow_it(sim: SimFleet) -> None:
    url = next(t.url for t in sim.targets if t.kind == "vllm")
    with override_settings(FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=False):
        code, _, err = run("scrape", url, "--json")
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith(f"{url}: blocked: blocked by policy: loopback address 127.0.0.1 ")
    assert line.endswith("(set FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=true to allow it)")


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


# import_targets --from-prometheus: a real Prometheus scraping one fleetsim replica.


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusOverFleet]:
    with prometheus_over_fleet(tmp_path_factory.mktemp("prom"), seed=12) as running:
        yield running


def nothing_registered() -> bool:
    return not (
        Fleet.objects.exists() or Endpoint.objects.exists() or PrometheusSource.objects.exists()
    )


@pytest.mark.django_db
@pytest.mark.prometheus
def test_import_targets_from_prometheus_registers_its_active_targets_and_keeps_it_as_a_source(
    prometheus: PrometheusOverFleet,
) -> None:
    count = len(prometheus.sim.targets)
    code, out, err = run("import_targets", "--from-prometheus", prometheus.url, "--fleet", "prod")
    assert code == 0, err
    assert out.strip() == (
        f"fleet prod: {count} endpoints added, 0 updated (discovered from {prometheus.url})"
    )
    registered = dict(Endpoint.objects.filter(fleet__slug="prod").values_list("url", "kind"))
    assert registered == {t.url: t.kind for t in prometheus.sim.targets}
    code, out, _ = run("import_targets", "--from-prometheus", prometheus.url, "--fleet", "prod")
    assert code == 0
    assert f"0 endpoints added, {count} updated" in out
    source = PrometheusSource.objects.get()  # reused, not added again
    assert (source.fleet.slug, source.url) == ("prod", prometheus.url)


@pytest.mark.django_db
@pytest.mark.prometheus
def test_import_targets_from_a_prometheus_answering_an_error_names_it_and_exits_2(
    prometheus: PrometheusOverFleet,
) -> None:
    url = f"{prometheus.url}/no-such-prefix"  # the real server answers its 404 page
    code, out, err = run("import_targets", "--from-prometheus", url, "--fleet", "prod")
    assert code == 2
    assert out == ""
    assert err.strip() == f"{url}: prometheus answered HTTP 404 with something that is not JSON"
    assert nothing_registered()


@pytest.mark.django_db
def test_import_targets_from_a_prometheus_that_is_down_names_it_and_exits_2(
    closed_port: int,
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    code, _, err = run("import_targets", "--from-prometheus", url, "--fleet", "prod")
    assert code == 2
    assert err.strip() == f"{url}: prometheus unreachable: ConnectError"
    assert nothing_registered()


# A real Prometheus never answers its API with an HTML page or a JSON document of another
# shape; a proxy in front of it (or something else on its port) does. These two stand in.
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("respond", "says"),
    [
        (html_error_page, "prometheus answered HTTP 502 with an HTML page"),
        (
            json_answer(200, {"status": "success", "data": {"activeTargets": {"a": 1}}}),
            "Prometheus answer has no data.activeTargets list",
        ),
        (
            json_answer(200, {"status": "success", "data": {"activeTargets": [{
                "scrapeUrl": "http://127.0.0.1:1/metrics", "labels": ["job", "x"],
            }]}}),
            "data.activeTargets[0]: 'labels' is not a mapping",
        ),
        (
            json_answer(200, ["status", "success"]),
            "prometheus answered HTTP 200 with something that is not JSON",
        ),
    ],
)  # fmt: skip
def test_import_targets_from_a_stand_in_answering_html_or_a_wrong_shape_exits_2(
    respond: Responder, says: str
) -> None:
    with serving(respond) as server:
        url = server.url("")
        code, _, err = run("import_targets", "--from-prometheus", url, "--fleet", "prod")
    assert code == 2
    assert err.strip() == f"{url}: {says}"
    assert server.requests == [("GET", "/api/v1/targets?state=active")]
    assert nothing_registered()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "setting"),
    [
        ("http://127.0.0.1:9090", "FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK"),
        ("http://10.20.0.9:9090", "FLEETSCOPE_OUTBOUND_ALLOW"),
    ],
)
def test_import_targets_refuses_a_prometheus_outside_the_policy_naming_the_setting(
    url: str, setting: str
) -> None:
    with override_settings(FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=False):
        code, _, err = run("import_targets", "--from-prometheus", url, "--fleet", "prod")
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"{url}: blocked by policy: ")
    assert f"{setting} to allow it" in line or f"{setting}=true to allow it" in line
    assert nothing_registered()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "args",
    [
        ["--fleet", "prod"],
        ["targets.json", "--from-prometheus", "http://127.0.0.1:9090", "--fleet", "prod"],
    ],
)
def test_import_targets_needs_exactly_one_of_a_file_and_a_prometheus(args: list[str]) -> None:
    code, out, err = run("import_targets", *args)
    assert code == 2
    assert out == ""
    assert err.strip() == "give exactly one of a target FILE or --from-prometheus URL"
    assert nothing_registered()
