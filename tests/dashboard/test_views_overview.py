"""The overview and group pages: filters in the URL, clear errors for bad ones."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.panels import PANELS
from inventory.models import Endpoint, EndpointKind
from tests.dashboard.replicafill import replica
from tests.queries.storefill import fleet_named

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet_slug() -> str:
    fleet = fleet_named("views")
    replica(fleet, "10.0.0.1:8000")
    Endpoint.objects.create(fleet=fleet, url="http://10.0.0.1:9400/metrics", kind=EndpointKind.DCGM)
    return fleet.slug


def test_a_group_page_shows_only_that_groups_panels(owner_client: Client, fleet_slug: str) -> None:
    page = owner_client.get(f"/fleets/{fleet_slug}/engine/?since=6h").content.decode()
    shown = {p.id for p in PANELS if f'data-panel="{p.id}"' in page}
    assert shown == {p.id for p in PANELS if p.group == "engine"}
    assert 'id="replica-table"' not in page
    # The tabs keep the filters, so switching group keeps the view.
    assert f'href="/fleets/{fleet_slug}/latency/?since=6h"' in page
    assert 'data-live="false"' in page


def test_the_overview_lists_vllm_replicas_in_the_replica_filter(
    owner_client: Client, fleet_slug: str
) -> None:
    page = owner_client.get(f"/fleets/{fleet_slug}/?instance=10.0.0.1:8000").content.decode()
    assert '<option value="10.0.0.1:8000" selected>' in page
    assert "10.0.0.1:9400" not in page  # the DCGM exporter is not a replica to filter on
    assert 'id="replica-table"' in page


def test_an_unknown_group_page_is_not_found(owner_client: Client, fleet_slug: str) -> None:
    assert owner_client.get(f"/fleets/{fleet_slug}/billing/").status_code == 404


def test_group_pages_require_login(client: Client, fleet_slug: str) -> None:
    response = client.get(f"/fleets/{fleet_slug}/latency/")
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("instance=10.9.9.9:1", "replica '10.9.9.9:1' is not a vLLM endpoint of this fleet"),
        ("instance=10.0.0.1:9400", "replica '10.0.0.1:9400' is not a vLLM endpoint"),
        ("group=billing", "group must be one of traffic, queue, latency, engine, gpu"),
        ("backend=graphite", "backend must be one of local, prometheus"),
        ("since=2y", "since must be one of"),
        ("end=0001-01-01T00:00:00Z", "end '0001-01-01T00:00:00Z' is before"),
        ("end=9999-12-31T23:59:59-12:00", "end '9999-12-31T23:59:59-12:00' is after"),
        ("since=3d&end=1970-01-02T00:00:00Z", "end '1970-01-02T00:00:00Z' is before"),
    ],
)
def test_bad_filters_get_a_clear_message(
    owner_client: Client, fleet_slug: str, query: str, message: str
) -> None:
    response = owner_client.get(f"/fleets/{fleet_slug}/overview.json?{query}")
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_the_json_for_one_replica_and_group_holds_only_that(
    owner_client: Client, fleet_slug: str
) -> None:
    query = "instance=10.0.0.1:8000&group=latency&end=2026-03-01T12:05:00Z&since=15m"
    payload = owner_client.get(f"/fleets/{fleet_slug}/overview.json?{query}").json()
    assert payload["instance"] == "10.0.0.1:8000"
    assert {p["group"] for p in payload["panels"]} == {"latency"}
    assert "replicas" not in payload
    ttft = next(p for p in payload["panels"] if p["id"] == "latency.ttft")
    assert ttft["status"] == "ok", ttft["notes"]


def test_the_model_filter_lists_the_models_the_fleet_serves(
    owner_client: Client, fleet_slug: str
) -> None:
    page = owner_client.get(f"/fleets/{fleet_slug}/?model=llama").content.decode()
    assert '<option value="llama" selected>llama</option>' in page
    page = owner_client.get(f"/fleets/{fleet_slug}/?model=gone").content.decode()
    assert '<option value="gone" selected>gone (not served now)</option>' in page
