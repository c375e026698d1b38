from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from inventory.models import Endpoint, Fleet, PrometheusSource
from inventory.registration import fleet_ensure, targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from tests.inventory.badservers import send_body, serving
from tests.inventory.promfleet import PrometheusOverFleet, prometheus_over_fleet
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

HOSTILE = '"><img src=x onerror=alert(1)><script>alert(2)</script>'


def test_inventory_pages_require_login(client: Client) -> None:
    for url in (reverse("inventory-overview"), "/inventory/anything/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_unknown_fleet_is_404(owner_client: Client) -> None:
    assert owner_client.get("/inventory/no-such-fleet/").status_code == 404


def test_fleet_page_escapes_hostile_label_values_and_error_text(owner_client: Client) -> None:
    quoted = HOSTILE.replace('"', '\\"')
    body = (
        "# TYPE vllm:num_requests_running gauge\n"
        f'vllm:num_requests_running{{model_name="{quoted}"}} 1\n'
    ).encode()
    bad = b'ok 1\nbroken{a="' + HOSTILE.encode() + b'" 1\n'

    def good_endpoint(h: BaseHTTPRequestHandler) -> None:
        send_body(h, body)

    def bad_endpoint(h: BaseHTTPRequestHandler) -> None:
        send_body(h, bad)

    with serving(good_endpoint) as good, serving(bad_endpoint) as broken:
        specs = [TargetSpec(good.url(), "vllm", {}), TargetSpec(broken.url(), "vllm", {})]
        fleet = targets_import(fleet_slug="hostile", specs=specs).fleet
        fleet_scrape(fleet_id=fleet.pk)
    html = owner_client.get(reverse("inventory-fleet-detail", args=["hostile"])).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "parse error at line 2" in html
    assert "vllm:num_requests_running" in html


def test_fleet_page_without_scrapes_says_nothing_scraped_yet(owner_client: Client) -> None:
    targets_import(fleet_slug="fresh", specs=[TargetSpec("http://127.0.0.1:9/metrics", "vllm", {})])
    html = owner_client.get(reverse("inventory-fleet-detail", args=["fresh"])).content.decode()
    assert "Nothing scraped yet" in html
    assert "never-scraped" in html


def test_the_form_registers_an_endpoint_that_passes_the_policy(owner_client: Client) -> None:
    fleet = targets_import(fleet_slug="form", specs=[]).fleet
    url = reverse("inventory-fleet-detail", args=["form"])
    response = owner_client.post(url, {"url": "http://127.0.0.1:9400/metrics", "kind": "dcgm"})
    assert response.status_code == 302
    assert list(fleet.endpoints.values_list("url", "kind")) == [
        ("http://127.0.0.1:9400/metrics", "dcgm")
    ]


def test_the_form_refuses_a_metadata_address_and_writes_nothing(owner_client: Client) -> None:
    fleet = targets_import(fleet_slug="form", specs=[]).fleet
    url = reverse("inventory-fleet-detail", args=["form"])
    response = owner_client.post(url, {"url": "http://169.254.169.254/latest", "kind": "vllm"})
    assert response.status_code == 200
    assert "blocked by policy" in response.content.decode()
    assert not fleet.endpoints.exists()


def test_the_form_without_a_csrf_token_is_refused(owner: User) -> None:
    from django.test import Client as RawClient

    fleet = targets_import(fleet_slug="form", specs=[]).fleet
    client = RawClient(enforce_csrf_checks=True)
    client.force_login(owner)
    url = reverse("inventory-fleet-detail", args=["form"])
    response = client.post(url, {"url": "http://127.0.0.1:9400/metrics", "kind": "vllm"})
    assert response.status_code == 403
    assert not fleet.endpoints.exists()


def test_the_form_refuses_a_url_the_fleet_already_has(owner_client: Client) -> None:
    fleet = targets_import(
        fleet_slug="form", specs=[TargetSpec("http://127.0.0.1:9400/metrics", "vllm", {})]
    ).fleet
    url = reverse("inventory-fleet-detail", args=["form"])
    for spelling in ("http://127.0.0.1:9400/metrics", "http://127.0.0.1:9400/metrics/"):
        response = owner_client.post(url, {"url": spelling, "kind": "vllm"})
        assert response.status_code == 200
        endpoint = fleet.endpoints.get()
        assert (
            f"already registered as http://127.0.0.1:9400/metrics (endpoint {endpoint.pk}, "
            "fleet form)"
        ) in response.content.decode()
    assert fleet.endpoints.count() == 1


# Discovery from the page: staff only, POST-redirect-GET, the outcome as a message.

DISCOVER_BUTTON = "Discover targets from Prometheus</button>"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusOverFleet]:
    with prometheus_over_fleet(tmp_path_factory.mktemp("prom"), seed=13) as running:
        yield running


@pytest.fixture
def staff(db: None) -> User:
    return user_with_role("operator", "admin", password="operator-password-1")


@pytest.fixture
def staff_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def source_of(
    fleet: Fleet, url: str, *, name: str = "prom", enabled: bool = True
) -> PrometheusSource:
    return PrometheusSource.objects.create(fleet=fleet, name=name, url=url, enabled=enabled)


def discover_url(slug: str) -> str:
    return reverse("inventory-fleet-discover", args=[slug])


def test_staff_see_the_discovery_form_listing_the_fleets_enabled_prometheus_sources(
    staff_client: Client,
) -> None:
    fleet = fleet_ensure(slug="disc")
    shown = source_of(fleet, "http://127.0.0.1:9090", name="main-prom")
    source_of(fleet, "http://127.0.0.1:9091", name="retired-prom", enabled=False)
    source_of(fleet_ensure(slug="other"), "http://127.0.0.1:9092", name="elsewhere-prom")
    html = staff_client.get(reverse("inventory-fleet-detail", args=["disc"])).content.decode()
    assert DISCOVER_BUTTON in html
    assert f'action="{discover_url("disc")}"' in html
    assert f'<option value="{shown.pk}">main-prom (http://127.0.0.1:9090)</option>' in html
    assert "retired-prom" not in html and "elsewhere-prom" not in html


def test_staff_are_told_how_to_add_a_source_when_the_fleet_has_none(staff_client: Client) -> None:
    fleet_ensure(slug="bare")
    html = staff_client.get(reverse("inventory-fleet-detail", args=["bare"])).content.decode()
    assert DISCOVER_BUTTON not in html
    assert "import_targets --from-prometheus URL --fleet bare" in html


@pytest.mark.parametrize("role", ["viewer", "oncall"])
def test_below_admin_neither_see_the_forms_nor_may_post_them(role: str) -> None:
    fleet = fleet_ensure(slug="disc")
    source = source_of(fleet, "http://127.0.0.1:9")
    client = Client()
    client.force_login(user_with_role("someone", role))
    html = client.get(reverse("inventory-fleet-detail", args=["disc"])).content.decode()
    assert "Discover targets" not in html and "Add endpoint" not in html
    assert "Endpoints are registered by admins." in html
    response = client.post(discover_url("disc"), {"source": source.pk})
    assert response.status_code == 403
    registered = client.post(
        reverse("inventory-fleet-detail", args=["disc"]), {"url": "http://127.0.0.1:9/metrics"}
    )
    assert registered.status_code == 403
    assert not Endpoint.objects.exists()


def test_discovery_is_post_only_and_csrf_protected(staff: User) -> None:
    source = source_of(fleet_ensure(slug="disc"), "http://127.0.0.1:9")
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    assert client.get(discover_url("disc")).status_code == 405
    assert client.post(discover_url("disc"), {"source": source.pk}).status_code == 403
    assert not Endpoint.objects.exists()


@pytest.mark.prometheus
def test_discovery_registers_the_sources_targets_and_says_how_many_after_the_redirect(
    staff_client: Client, prometheus: PrometheusOverFleet
) -> None:
    fleet = fleet_ensure(slug="disc")
    source = source_of(fleet, prometheus.url, name="main-prom")
    count = len(prometheus.sim.targets)
    response = staff_client.post(discover_url("disc"), {"source": source.pk})
    assert response.status_code == 302
    assert response["Location"] == reverse("inventory-fleet-detail", args=["disc"])
    html = staff_client.get(response["Location"]).content.decode()
    assert f"Discovered from main-prom: {count} added, 0 updated." in html
    assert set(fleet.endpoints.values_list("url", flat=True)) == {
        t.url for t in prometheus.sim.targets
    }
    again = staff_client.post(discover_url("disc"), {"source": source.pk}, follow=True)
    assert f"Discovered from main-prom: 0 added, {count} updated." in again.content.decode()
    # The message is shown once, not on every later visit.
    html = staff_client.get(response["Location"]).content.decode()
    assert "Discovered from" not in html


def test_a_failed_discovery_shows_the_reason_and_registers_nothing(
    staff_client: Client, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    source = source_of(fleet_ensure(slug="disc"), url, name="down-prom")
    response = staff_client.post(discover_url("disc"), {"source": source.pk}, follow=True)
    assert response.redirect_chain == [(reverse("inventory-fleet-detail", args=["disc"]), 302)]
    html = response.content.decode()
    assert f"Discovery from down-prom failed: {url}: prometheus unreachable: ConnectError" in html
    assert 'role="alert"' in html
    assert not Endpoint.objects.exists()


@pytest.mark.parametrize("pick", ["other-fleet", "disabled", "not-a-number", "missing"])
def test_discovery_refuses_a_source_that_is_not_one_of_the_fleets_enabled_ones(
    staff_client: Client, pick: str
) -> None:
    fleet = fleet_ensure(slug="disc")
    choices = {
        "other-fleet": source_of(fleet_ensure(slug="other"), "http://127.0.0.1:9").pk,
        "disabled": source_of(fleet, "http://127.0.0.1:9", enabled=False).pk,
        "not-a-number": "1;DROP",
    }
    data = {"source": choices[pick]} if pick in choices else {}
    response = staff_client.post(discover_url("disc"), data, follow=True)
    assert "pick one of this fleet&#x27;s enabled Prometheus sources" in response.content.decode()
    assert not Endpoint.objects.exists()


def test_discovery_for_an_unknown_fleet_is_404(staff_client: Client) -> None:
    assert staff_client.post(discover_url("no-such-fleet"), {"source": 1}).status_code == 404
