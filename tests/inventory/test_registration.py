from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import start_fleet
from fleetsim.targets import file_sd
from inventory.models import Endpoint, Fleet, PrometheusSource
from inventory.prometheus import PrometheusError
from inventory.registration import endpoints_discover, fleet_ensure, targets_import
from inventory.targets import TargetSpec

pytestmark = pytest.mark.django_db


def test_import_with_prune_makes_the_fleet_exactly_the_given_targets() -> None:
    first = [TargetSpec(f"http://127.0.0.1:{p}/metrics", "vllm", {}) for p in (9101, 9102)]
    targets_import(fleet_slug="f", specs=first)
    report = targets_import(fleet_slug="f", specs=first[1:], prune=True)
    assert (report.created, report.updated) == (0, 1)
    assert list(Endpoint.objects.values_list("url", flat=True)) == [first[1].url]


def test_endpoint_model_validation_applies_the_outbound_policy() -> None:
    fleet = fleet_ensure(slug="admin-made")
    endpoint = Endpoint(fleet=fleet, url="http://169.254.169.254/latest/meta-data", kind="vllm")
    with pytest.raises(ValidationError, match="blocked by policy"):
        endpoint.full_clean()


@pytest.mark.prometheus
def test_discovery_registers_the_active_targets_of_a_real_prometheus(tmp_path: Path) -> None:
    with start_fleet(replicas=2, seed=4) as sim:
        config = file_sd_config(tmp_path, file_sd(sim.targets))
        with running_prometheus(config, tmp_path / "data") as url:
            fleet = fleet_ensure(slug="discovered")
            source = PrometheusSource.objects.create(fleet=fleet, name="prom", url=url)

            def discovered() -> int | None:
                report = endpoints_discover(source=source, timeout_seconds=5)
                total = report.created + report.updated
                return total if total == len(sim.targets) else None

            wait_until(discovered, timeout=30, what="prometheus to list every target")
    urls = set(Endpoint.objects.filter(fleet=fleet).values_list("url", flat=True))
    assert urls == {t.url for t in sim.targets}
    kinds = dict(Endpoint.objects.values_list("url", "kind"))
    assert {kinds[t.url] for t in sim.targets if t.kind == "dcgm"} == {"dcgm"}


def test_discovery_from_a_dead_prometheus_fails_cleanly(closed_port: int) -> None:
    fleet = fleet_ensure(slug="nothing")
    source = PrometheusSource.objects.create(
        fleet=fleet, name="down", url=f"http://127.0.0.1:{closed_port}"
    )
    with pytest.raises(PrometheusError, match="prometheus unreachable: ConnectError"):
        endpoints_discover(source=source, timeout_seconds=2)
    assert not Endpoint.objects.exists()
    assert Fleet.objects.count() == 1


def test_single_label_host_names_register_when_the_allow_list_names_them() -> None:
    with override_settings(FLEETSCOPE_OUTBOUND_ALLOW=["fleetsim"]):
        report = targets_import(
            fleet_slug="compose", specs=[TargetSpec("http://fleetsim:18000/metrics", "vllm", {})]
        )
    assert report.created == 1
