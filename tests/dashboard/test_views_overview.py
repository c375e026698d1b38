"""The overview and group pages: filters in the URL, clear errors for bad ones."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from django.test import Client, override_settings

from dashboard.panels import PANELS
from inventory.models import Endpoint, EndpointKind, Fleet
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


BAD_FILTERS = [
    ("instance=10.9.9.9:1", "instance",
     "instance '10.9.9.9:1' is not a vLLM replica of this fleet; its replicas: 10.0.0.1:8000"),
    ("instance=10.0.0.1:9400", "instance", "instance '10.0.0.1:9400' is not a vLLM replica"),
    ("model=mistral", "model",
     "model 'mistral' is not a model this fleet serves or has served; its models: llama"),
    ("group=billing", "group", "group must be one of traffic, queue, latency, engine, gpu"),
    ("backend=graphite", "backend", "backend must be one of local, prometheus"),
    ("since=2y", "since", "since must be one of 15m, 1h, 3h, 6h, 12h, 24h, 3d, not '2y'"),
    ("since=7x", "since", "since must be one of 15m, 1h, 3h, 6h, 12h, 24h, 3d, not '7x'"),
    ("end=0001-01-01T00:00:00Z", "end", "end '0001-01-01T00:00:00Z' is before"),
    ("end=9999-12-31T23:59:59-12:00", "end", "end '9999-12-31T23:59:59-12:00' is after"),
    ("since=3d&end=1970-01-02T00:00:00Z", "end", "end '1970-01-02T00:00:00Z' is before"),
    ("end=2999-01-01T00:00:00Z", "end", "end '2999-01-01T00:00:00Z' is in the future (now is 20"),
    ("end=yesterday", "end", "end 'yesterday' is not an ISO 8601 time"),
]  # fmt: skip


@pytest.mark.parametrize(("query", "parameter", "message"), BAD_FILTERS)
def test_bad_filters_get_a_clear_message_naming_the_parameter(
    owner_client: Client, fleet_slug: str, query: str, parameter: str, message: str
) -> None:
    response = owner_client.get(f"/fleets/{fleet_slug}/overview.json?{query}")
    assert response.status_code == 400
    assert response.json()["parameter"] == parameter
    assert response.json()["error"].startswith(parameter)
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    ("query", "parameter", "message"), [b for b in BAD_FILTERS if b[1] != "group"]
)
def test_a_page_with_a_bad_filter_says_so_once_and_draws_no_empty_panels(
    owner_client: Client, fleet_slug: str, query: str, parameter: str, message: str
) -> None:
    response = owner_client.get(f"/fleets/{fleet_slug}/?{query}")
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('id="view-alert"') == 1
    assert message.replace("'", "&#x27;") in page
    assert f'data-problem="{parameter}"' in page  # the script asks for nothing
    assert re.search(f'name="{parameter}"[^>]*aria-invalid="true"', page)
    assert "data-panel=" not in page and 'id="replica-table"' not in page
    # The link back keeps every other filter.
    others = "&".join(q for q in query.split("&") if not q.startswith(f"{parameter}="))
    back = f"/fleets/{fleet_slug}/" + (f"?{others}" if others else "")
    assert f'href="{back}">show the view without {parameter}</a>' in page


def test_a_good_page_has_no_alert_and_marks_no_filter(
    owner_client: Client, fleet_slug: str
) -> None:
    page = owner_client.get(f"/fleets/{fleet_slug}/?since=6h").content.decode()
    assert '<div class="view-alert" id="view-alert" role="alert" hidden></div>' in page
    assert 'data-problem=""' in page and "aria-invalid" not in page
    assert 'data-panel="latency.ttft"' in page


def test_an_unknown_replica_lists_at_most_twenty_of_them(owner_client: Client) -> None:
    fleet = Fleet.objects.create(slug="wide", name="wide")
    for i in range(25):
        Endpoint.objects.create(fleet=fleet, url=f"http://10.1.0.{i:02}:8000/metrics")
    answer = owner_client.get("/fleets/wide/overview.json?instance=10.9.9.9:1").json()
    listed = answer["error"].split("; its replicas: ")[1]
    assert listed.startswith("10.1.0.00:8000, 10.1.0.01:8000")
    assert listed.endswith("10.1.0.19:8000 and 5 more")
    assert listed.count(":8000") == 20


def test_a_model_served_earlier_is_still_a_model_of_the_fleet(
    owner_client: Client, fleet_slug: str
) -> None:
    fleet = Fleet.objects.get(slug=fleet_slug)
    replica(fleet, "10.0.0.2:8000", model="qwen")
    Endpoint.objects.filter(fleet=fleet, url__contains="10.0.0.2").update(enabled=False)
    response = owner_client.get(f"/fleets/{fleet_slug}/overview.json?model=qwen&since=15m")
    assert response.status_code == 200, response.content
    page = owner_client.get(f"/fleets/{fleet_slug}/?model=qwen").content.decode()
    assert '<option value="qwen" selected>qwen (not served now)</option>' in page


@override_settings(PROMETHEUS_URL=None)
def test_without_prometheus_url_the_source_is_not_offered_and_asking_for_it_says_why(
    owner_client: Client, fleet_slug: str
) -> None:
    page = owner_client.get(f"/fleets/{fleet_slug}/").content.decode()
    assert 'value="prometheus"' not in page
    assert '<option value="local" selected>embedded store</option>' in page
    response = owner_client.get(f"/fleets/{fleet_slug}/overview.json?backend=prometheus")
    assert response.status_code == 400
    assert response.json() == {
        "error": "Prometheus is not configured (PROMETHEUS_URL is empty)",
        "parameter": "backend",
    }
    page = owner_client.get(f"/fleets/{fleet_slug}/?backend=prometheus&since=6h").content.decode()
    assert page.count("Prometheus is not configured (PROMETHEUS_URL is empty)") == 1
    assert '<option value="prometheus" selected>Prometheus (not configured)</option>' in page
    assert "data-panel=" not in page  # one banner, not a page of red panels
    assert f'href="/fleets/{fleet_slug}/?since=6h">show the view without backend</a>' in page


@override_settings(PROMETHEUS_URL="http://127.0.0.1:9/")
def test_with_prometheus_url_the_source_is_offered(owner_client: Client, fleet_slug: str) -> None:
    page = owner_client.get(f"/fleets/{fleet_slug}/?backend=local").content.decode()
    assert '<option value="prometheus">Prometheus</option>' in page


def test_a_signed_out_poller_gets_401_in_json_not_the_login_page(
    client: Client, fleet_slug: str
) -> None:
    response = client.get(f"/fleets/{fleet_slug}/overview.json?since=6h")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    next_url = quote(f"/fleets/{fleet_slug}/overview.json", safe="")
    assert response.json() == {"error": "signed out", "login_url": f"/login/?next={next_url}"}
    # The pages themselves still send a browser to the login page.
    page = client.get(f"/fleets/{fleet_slug}/?since=6h")
    assert page.status_code == 302 and "/login/" in page["Location"]


def test_the_json_of_a_fleet_one_may_not_see_is_a_404_in_json(owner_client: Client) -> None:
    response = owner_client.get("/fleets/nowhere/overview.json")
    assert response.status_code == 404
    assert response.json() == {"error": "no fleet 'nowhere'"}


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
    assert '<option value="gone" selected>gone (unknown)</option>' in page
