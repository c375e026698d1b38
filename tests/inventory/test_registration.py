from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import start_fleet
from fleetsim.targets import file_sd
from inventory.models import Endpoint, Fleet, PrometheusSource
from inventory.prometheus import READ_ONLY_PATHS, PrometheusUnavailable
from inventory.registration import (
    DiscoveryError,
    RegistrationError,
    endpoints_discover,
    endpoints_discover_from_url,
    fleet_ensure,
    prometheus_url_check,
    targets_import,
)
from inventory.targets import TargetSpec
from tests.inventory.promfleet import PrometheusOverFleet, prometheus_over_fleet

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
    with pytest.raises(DiscoveryError, match="prometheus unreachable: ConnectError") as caught:
        endpoints_discover(source=source, timeout_seconds=2)
    assert str(caught.value).startswith(f"http://127.0.0.1:{closed_port}: ")
    assert isinstance(caught.value.__cause__, PrometheusUnavailable)
    assert not Endpoint.objects.exists()
    assert Fleet.objects.count() == 1


def test_single_label_host_names_register_when_the_allow_list_names_them() -> None:
    with override_settings(FLEETSCOPE_OUTBOUND_ALLOW=["fleetsim"]):
        report = targets_import(
            fleet_slug="compose", specs=[TargetSpec("http://fleetsim:18000/metrics", "vllm", {})]
        )
    assert report.created == 1


# Endpoint identity (issue 18, failure 1): a target is its normalised scheme, host, port and
# path; a second spelling of a registered target is refused, naming the endpoint holding it.


@pytest.fixture(scope="module")
def replica() -> Iterator[str]:
    """The host:port of one real fleetsim replica (its /metrics answers every spelling
    below the same)."""
    with start_fleet(replicas=1, seed=18) as sim:
        yield urlsplit(sim.targets[0].url).netloc


SPELLINGS = (
    "http://{hp}/metrics/",
    "HTTP://{hp}/metrics",
    "http://{hp}//metrics",
    "http://{hp}/./metrics",
    "http://{hp}/other/../metrics",
)


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_second_spelling_of_a_registered_target_is_refused_naming_the_endpoint(
    replica: str, spelling: str
) -> None:
    first = targets_import(
        fleet_slug="prod", specs=[TargetSpec(f"http://{replica}/metrics", "vllm", {})]
    )
    endpoint = Endpoint.objects.get()
    again = TargetSpec(spelling.format(hp=replica), "vllm", {})
    expected = (
        f"already registered as http://{replica}/metrics (endpoint {endpoint.pk}, fleet prod)"
    )
    with pytest.raises(RegistrationError, match=re.escape(expected)):
        targets_import(fleet=first.fleet, specs=[again])
    # The admin (and the page's form) validate the model: the same refusal.
    with pytest.raises(ValidationError, match=re.escape(expected)):
        Endpoint(fleet=first.fleet, url=again.url, kind="vllm").full_clean()
    assert list(Endpoint.objects.values_list("url", flat=True)) == [f"http://{replica}/metrics"]
    # The same URL again is the same endpoint, updated, as before.
    report = targets_import(
        fleet=first.fleet, specs=[TargetSpec(f"http://{replica}/metrics", "dcgm", {})]
    )
    assert (report.created, report.updated) == (0, 1)


def test_the_default_port_spelled_out_is_the_same_target() -> None:
    fleet = targets_import(
        fleet_slug="ports", specs=[TargetSpec("http://127.0.0.1/metrics", "vllm", {})]
    ).fleet
    with pytest.raises(RegistrationError, match="already registered as http://127.0.0.1/metrics"):
        targets_import(fleet=fleet, specs=[TargetSpec("http://127.0.0.1:80/metrics", "vllm", {})])
    assert Endpoint.objects.get().instance == "127.0.0.1:80"


def test_one_target_listed_twice_in_one_import_refuses_the_import(replica: str) -> None:
    specs = [
        TargetSpec(f"http://{replica}/metrics", "vllm", {}),
        TargetSpec(f"http://{replica}/metrics/", "vllm", {}),
    ]
    with pytest.raises(RegistrationError, match="listed twice"):
        targets_import(fleet_slug="twice", specs=specs)
    assert not Endpoint.objects.exists()


def test_the_same_target_in_another_fleet_is_another_endpoint(replica: str) -> None:
    for slug in ("a", "b"):
        targets_import(fleet_slug=slug, specs=[TargetSpec(f"http://{replica}/metrics", "vllm", {})])
    assert Endpoint.objects.count() == 2


def test_endpoints_sharing_a_host_and_port_get_instances_unique_in_the_fleet(
    replica: str,
) -> None:
    specs = [
        TargetSpec(f"http://{replica}/metrics", "vllm", {}),
        TargetSpec(f"http://{replica}/metrics?shard=2", "vllm", {}),
    ]
    targets_import(fleet_slug="shared", specs=specs)
    instances = dict(Endpoint.objects.values_list("url", "instance"))
    assert instances == {specs[0].url: replica, specs[1].url: f"{replica}/metrics?shard=2"}


# Discovery: a module-wide Prometheus over one fleetsim replica; the refused target sits at
# a documentation address (192.0.2.0/24, never routed) that the outbound policy refuses.
REFUSED_TARGET = "192.0.2.7:8000"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusOverFleet]:
    with prometheus_over_fleet(tmp_path_factory.mktemp("prom"), seed=6) as running:
        yield running


@pytest.mark.prometheus
def test_discovery_sends_only_get_to_read_only_prometheus_api_paths(
    prometheus: PrometheusOverFleet, requests_seen: list[tuple[str, str]]
) -> None:
    report = endpoints_discover_from_url(
        fleet_slug="watched", url=prometheus.url, timeout_seconds=5
    )
    assert report.created == len(prometheus.sim.targets)
    assert requests_seen, "the discovery went around the outbound guard"
    assert {method for method, _ in requests_seen} == {"GET"}
    paths = {urlsplit(url).path for _, url in requests_seen}
    assert paths <= READ_ONLY_PATHS
    assert paths == {"/api/v1/targets"}  # discovering scrapes nothing itself
    assert {urlsplit(url).netloc for _, url in requests_seen} == {urlsplit(prometheus.url).netloc}


@pytest.mark.prometheus
def test_discovery_from_a_url_creates_the_fleet_its_source_and_endpoints_then_reuses_them(
    prometheus: PrometheusOverFleet,
) -> None:
    count = len(prometheus.sim.targets)
    first = endpoints_discover_from_url(
        fleet_slug="prod", url=prometheus.url + "/", timeout_seconds=5
    )
    again = endpoints_discover_from_url(fleet_slug="prod", url=prometheus.url, timeout_seconds=5)
    assert (first.created, first.updated) == (count, 0)
    assert (again.created, again.updated) == (0, count)
    source = PrometheusSource.objects.get()
    assert (source.fleet.slug, source.url) == ("prod", prometheus.url)
    assert first.source == again.source == source
    urls = set(Endpoint.objects.filter(fleet__slug="prod").values_list("url", flat=True))
    assert urls == {t.url for t in prometheus.sim.targets}


@pytest.mark.prometheus
def test_one_discovered_target_outside_the_policy_rejects_the_whole_discovery(
    tmp_path: Path,
) -> None:
    with (
        prometheus_over_fleet(tmp_path, extra_targets=(REFUSED_TARGET,)) as running,
        pytest.raises(DiscoveryError) as caught,
    ):
        endpoints_discover_from_url(fleet_slug="mixed", url=running.url, timeout_seconds=5)
    message = str(caught.value)
    assert message.startswith(f"{running.url}: discovered target http://{REFUSED_TARGET}/")
    assert "documentation address 192.0.2.7 is not in the allow-list" in message
    assert "FLEETSCOPE_OUTBOUND_ALLOW" in message
    assert not Fleet.objects.exists()
    assert not PrometheusSource.objects.exists()
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize(
    ("url", "loopback", "says"),
    [
        (
            "http://127.0.0.1:9090",
            False,
            "blocked by policy: loopback address 127.0.0.1 "
            "(set FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=true to allow it)",
        ),
        (
            "http://localhost:9090",
            False,
            "(set FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=true to allow it)",
        ),
        (
            "http://10.20.0.9:9090",
            True,
            "private address (RFC 1918) 10.20.0.9 is not in the allow-list "
            "(add it to FLEETSCOPE_OUTBOUND_ALLOW to allow it)",
        ),
        ("http://169.254.169.254/", True, "blocked by policy: cloud metadata address"),
        ("http://127.0.0.1:9090/?next=/admin", True, "takes no query string"),
        ("ftp://127.0.0.1:9090", True, "scheme 'ftp' is not allowed"),
    ],
)
def test_discovery_refuses_a_prometheus_url_the_outbound_policy_refuses_before_asking_it(
    url: str, loopback: bool, says: str, requests_seen: list[tuple[str, str]]
) -> None:
    with (
        override_settings(FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=loopback),
        pytest.raises(DiscoveryError) as caught,
    ):
        endpoints_discover_from_url(fleet_slug="refused", url=url, timeout_seconds=2)
    assert str(caught.value).startswith(f"{url}: ")
    assert says in str(caught.value)
    assert requests_seen == []
    assert not Fleet.objects.exists()
    assert not PrometheusSource.objects.exists()


def test_a_refusal_without_a_setting_that_allows_it_names_none() -> None:
    with pytest.raises(DiscoveryError) as caught:
        prometheus_url_check("http://169.254.169.254/")
    assert "FLEETSCOPE_" not in str(caught.value)


def test_a_prometheus_url_is_kept_without_its_trailing_slash_and_printable() -> None:
    assert prometheus_url_check("http://LOCALHOST:9090/prom/") == "http://localhost:9090/prom"
    with pytest.raises(DiscoveryError) as caught:
        prometheus_url_check("http://127.0.0.1:9090/\n\x1b[31m")
    assert "\n" not in str(caught.value) and "\x1b" not in str(caught.value)


def test_a_host_name_that_resolves_into_a_refused_network_is_refused_at_discovery(
    monkeypatch: pytest.MonkeyPatch, requests_seen: list[tuple[str, str]]
) -> None:
    """The name passed at registration; what it resolves to now is checked too (rebinding)."""

    def resolves_to_metadata(host: str, port: int, **kwargs: object) -> list[tuple]:
        return [(2, 1, 6, "", ("169.254.169.254", port))]

    monkeypatch.setattr("socket.getaddrinfo", resolves_to_metadata)
    with (
        override_settings(FLEETSCOPE_OUTBOUND_ALLOW=["prometheus.example"]),
        pytest.raises(DiscoveryError, match="blocked by policy: cloud metadata address"),
    ):
        endpoints_discover_from_url(
            fleet_slug="rebound", url="http://prometheus.example:9090", timeout_seconds=2
        )
    assert requests_seen == []
