"""A real Prometheus (the Debian package) scraping a live fleet and querying a backfilled one."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import start_fleet
from fleetsim.history import History
from fleetsim.targets import file_sd
from tests.fleetsim.conftest import query

pytestmark = pytest.mark.prometheus


def test_prometheus_scrapes_every_target_of_a_running_fleet_as_up(tmp_path: Path) -> None:
    with start_fleet(replicas=3, base_port=0, speed=2.0) as fleet:
        config = scrape_config(tmp_path, fleet.targets)
        with running_prometheus(config, tmp_path / "data") as url:

            def all_up() -> list[dict] | None:
                result = query(url, "up")
                ok = len(result) == len(fleet.targets)
                return result if ok and all(r["value"][1] == "1" for r in result) else None

            result = wait_until(all_up, timeout=45, what="every target to be up")
            jobs = sorted(r["metric"]["job"] for r in result)
            assert (
                jobs
                == ["dcgm-exporter"] * 3
                + ["fleetscope-gateway", "fleetscope-prober"]
                + ["vllm"] * 3
            )
            kv = query(url, "vllm:kv_cache_usage_perc")
            assert {r["metric"]["pod"] for r in kv} == {
                t.labels["pod"] for t in fleet.targets if t.kind == "vllm"
            }


def scrape_config(tmp_path: Path, targets: list) -> Path:
    return file_sd_config(tmp_path, file_sd(targets))


def test_prometheus_sees_a_downed_replica_go_down_and_come_back(tmp_path: Path) -> None:
    fleet = start_fleet(
        replicas=2, scenario="replica-down", at=40.0, duration=60.0, base_port=0, speed=10.0
    )
    with fleet, running_prometheus(scrape_config(tmp_path, fleet.targets), tmp_path / "d") as url:
        downed = fleet.manifest["affected_replicas"][0]["instances"]["vllm"]

        def up(value: str) -> bool | None:
            result = query(url, f'up{{instance="{downed}"}}')
            return bool(result) and result[0]["value"][1] == value or None

        wait_until(lambda: up("0"), timeout=45, what=f"prometheus to see {downed} down")
        wait_until(lambda: up("1"), timeout=45, what=f"prometheus to see {downed} back")


def test_a_backfilled_history_answers_a_range_query_with_the_incident_shape(
    tmp_path: Path, promtool: str
) -> None:
    history = History(replicas=2, scenario="kv-pressure", hours=0.5, at=600.0, duration=600.0)
    om = tmp_path / "fleet.om"
    manifest = history.write_openmetrics(om)
    data = tmp_path / "data"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    config = tmp_path / "prometheus.yml"
    config.write_text("global: {scrape_interval: 15s}\n")
    instance = manifest["affected_replicas"][0]["instances"]["vllm"]
    window = manifest["window"]
    with running_prometheus(config, data) as url:
        series = query(
            url,
            f'vllm:kv_cache_usage_perc{{instance="{instance}"}}',
            start=manifest["fleet_start"],
            end=window["end"],
            step=15,
        )
        assert len(series) == 1
        points = [(float(t), float(v)) for t, v in series[0]["values"]]
        before = [v for t, v in points if t < window["start"]]
        during = [v for t, v in points if window["start"] + 120 <= t <= window["end"]]
        assert len(before) > 30 and len(during) > 20
        assert max(before) < 0.5
        assert sum(during) / len(during) > 0.9
        rate = query(
            url,
            f'sum(increase(vllm:num_preemptions_total{{instance="{instance}"}}[10m]))',
            time=window["end"],
        )
        assert float(rate[0]["value"][1]) > 0
        up = query(url, "count(up == 1)", time=window["end"])
        assert up[0]["value"][1] == "6"
