from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from tests.inventory.badservers import send_body, serving

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
    response = owner_client.post(url, {"url": "http://127.0.0.1:9400/metrics", "kind": "vllm"})
    assert response.status_code == 200
    assert "already registered" in response.content.decode()
    assert fleet.endpoints.count() == 1
