"""The SLO pages: who may see them, the JSON, clear 400s, and hostile names kept as text."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import pytest
from django.test import Client

from inventory.models import Fleet
from slo import pages
from slo.evaluation import Interval, ObjectiveStatus, ReplicaAttainment
from slo.models import Objective, Slo
from tests.queries.storefill import fleet_named
from tests.roles import user_with_role
from tests.slo.conftest import END

AT = "2026-11-18T11:06:00Z"  # inside the recorded five minutes (conftest.END)
HOSTILE_NAME = "<script>alert(1)</script>"
HOSTILE_INSTANCE = '<img src=x onerror="alert(2)">:8000'


def an_slo(fleet: Fleet, slug: str = "chat", name: str = "Chat latency", **more: object) -> Slo:
    slo = Slo.objects.create(fleet=fleet, slug=slug, name=name, owner="llm-platform", **more)
    Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=0.3, target=0.99)
    Objective.objects.create(slo=slo, kind="success", threshold_seconds=None, target=0.999)
    return slo


def test_the_pages_require_login(client: Client, fleet: Fleet) -> None:
    an_slo(fleet)
    for path in ("/slos/", "/slos/prod/", "/slos/prod/chat/", "/slos/prod/chat.json"):
        response = client.get(path)
        assert response.status_code == 302 and "/login/" in response["Location"], path


def test_the_list_shows_each_slo_with_its_state_in_words(
    owner_client: Client, fleet: Fleet
) -> None:
    an_slo(fleet)
    page = owner_client.get(f"/slos/?at={AT}").content.decode()
    assert 'id="slo-table"' in page
    assert 'href="/slos/prod/chat/?at=' in page
    assert "Chat latency" in page and "llm-platform" in page
    assert "TTFT:" in page and "success ratio:" in page
    assert "held locally" in page or "held" in page  # the window note says what it covers


def test_a_fleet_without_slos_says_how_to_create_one(owner_client: Client) -> None:
    fleet_named("empty")
    page = owner_client.get("/slos/empty/").content.decode()
    assert "manage.py slo_preset empty chat" in page
    assert 'id="slo-table"' not in page


def test_the_detail_shows_objectives_burn_rates_replicas_and_provenance(
    owner_client: Client, fleet: Fleet
) -> None:
    an_slo(fleet, runbook_url="https://runbooks.example/chat")
    response = owner_client.get(f"/slos/prod/chat/?at={AT}")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="objective-ttft"' in page and 'id="objective-success"' in page
    assert "TTFT \u2264 300 ms for 99% of requests" in page
    assert "Where this comes from" in page and "vllm:time_to_first_token_seconds" in page
    assert 'href="https://runbooks.example/chat"' in page
    assert 'class="grid num burn-table"' in page
    assert "2026-11-18 11:06 UTC" in page
    assert 'id="slo-charts" type="application/json"' in page
    assert "<script>" not in page.split('id="slo-charts"')[0].split("</header>")[1]


def test_the_json_is_the_status_as_evaluated(owner_client: Client, fleet: Fleet) -> None:
    an_slo(fleet)
    response = owner_client.get(f"/slos/prod/chat.json?at={AT}&backend=local")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert (body["fleet"], body["slug"], body["backend"]) == ("prod", "chat", "local")
    assert body["at"] == pytest.approx(END - 30)  # evaluated at the whole minute of ?at=
    assert {o["kind"] for o in body["objectives"]} == {"ttft", "success"}
    assert set(body["objectives"][0]["attainment"] or {}) <= {"value", "lower", "upper"}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("at=yesterday", "at &#x27;yesterday&#x27; is not an ISO 8601 time"),
        ("at=2026-11-18T11:06:00", "needs a time zone (use Z for UTC)"),
        ("backend=graphite", "backend must be one of local, prometheus"),
    ],
)
def test_a_bad_parameter_gets_a_400_that_says_why(
    owner_client: Client, fleet: Fleet, query: str, message: str
) -> None:
    an_slo(fleet)
    for path in ("/slos/", "/slos/prod/", "/slos/prod/chat/"):
        response = owner_client.get(f"{path}?{query}")
        assert response.status_code == 400, path
        assert message in response.content.decode(), path
    response = owner_client.get(f"/slos/prod/chat.json?{query}")
    assert response.status_code == 400
    assert message.replace("&#x27;", "'") in response.json()["error"]


def test_unknown_fleets_and_slos_are_not_found(owner_client: Client, fleet: Fleet) -> None:
    an_slo(fleet)
    assert owner_client.get("/slos/nope/").status_code == 404
    assert owner_client.get("/slos/prod/nope/").status_code == 404
    assert owner_client.get("/slos/prod/nope.json").status_code == 404


def test_a_fleet_the_viewer_may_not_see_looks_missing(owner_client: Client, fleet: Fleet) -> None:
    an_slo(fleet)
    with mock.patch("inventory.access._may_see", return_value=False):
        for path in ("/slos/prod/", "/slos/prod/chat/", "/slos/prod/chat.json"):
            assert owner_client.get(path).status_code == 404, path
        page = owner_client.get("/slos/").content.decode()
    assert "Chat latency" not in page and 'id="slo-table"' not in page


def test_hostile_names_and_instance_labels_render_as_text(
    owner_client: Client, fleet: Fleet
) -> None:
    slo = an_slo(fleet, slug="xss", name=HOSTILE_NAME)
    slo.owner = HOSTILE_NAME
    slo.save()
    real = pages.replicas_shown

    def with_a_hostile_replica(objective: ObjectiveStatus) -> list[pages.ReplicaShown]:
        # The recorded replicas have plain names: one with markup joins the evaluated ones.
        hostile = ReplicaAttainment(HOSTILE_INSTANCE, Interval(0.5, 0.6), 10.0, "breached")
        return real(replace(objective, replicas=(hostile, *objective.replicas)))

    # Patched where the detail page looks it up, not on the face that re-exports it.
    with mock.patch("slo.pages.detail.replicas_shown", with_a_hostile_replica):
        detail = owner_client.get(f"/slos/prod/xss/?at={AT}").content.decode()
    listing = owner_client.get(f"/slos/?at={AT}").content.decode()
    for page in (detail, listing):
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<img src=x onerror="alert(2)">' not in detail
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;:8000" in detail


@pytest.mark.parametrize(("threshold_seconds", "linked"), [(0.001, True), (1000.0, False)])
def test_a_burning_slo_links_an_incident_for_it_and_a_healthy_one_does_not(
    owner_client: Client, fleet: Fleet, threshold_seconds: float, linked: bool
) -> None:
    slo = Slo.objects.create(fleet=fleet, slug="chat", name="Chat latency")
    Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=threshold_seconds, target=0.9)
    page = owner_client.get(f"/slos/prod/chat/?at={AT}").content.decode()
    link = '<p id="open-incident"><a href="/incidents/new/?fleet=prod&amp;slo=chat&amp;title=SLO'
    assert (link in page) is linked


def test_a_viewer_sees_no_link_to_open_an_incident(fleet: Fleet) -> None:
    slo = Slo.objects.create(fleet=fleet, slug="chat", name="Chat latency")
    Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=0.001, target=0.9)
    viewer = Client()
    viewer.force_login(user_with_role("watcher", "viewer"))
    page = viewer.get(f"/slos/prod/chat/?at={AT}").content.decode()
    assert 'id="slo-state"' in page and 'id="open-incident"' not in page
