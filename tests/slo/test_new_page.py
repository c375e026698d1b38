"""The New SLO page: a preset fills the form in, a valid POST creates the SLO and goes to
its page, an invalid one says what is wrong on the field and saves nothing, CSRF holds,
and a fleet the viewer may not see looks missing."""

from __future__ import annotations

import re
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.test import Client

from inventory.models import Fleet
from slo.models import Objective, Slo
from tests.queries.storefill import fleet_named
from tests.slo.conftest import form_data

NEW = "/slos/prod/new/"
TARGET_100 = "a target of 100% leaves no error budget; use at most 99.999%"


def new_slo_data(**given: Any) -> dict[str, Any]:
    return form_data(owner="llm-platform", **given)


def field_group(page: str, name: str) -> str:
    """The `<div>` Django renders for one field: its label, errors and input."""
    match = re.search(rf'<div>(?:(?!<div>).)*?name="{name}"(?:(?!<div>).)*?</div>', page, re.S)
    assert match is not None, name
    return match.group(0)


def test_the_page_requires_login(client: Client, fleet: Fleet) -> None:
    for response in (client.get(NEW), client.post(NEW, new_slo_data())):
        assert response.status_code == 302 and "/login/" in response["Location"]
    assert not Slo.objects.exists()


def test_a_preset_fills_the_form_in(owner_client: Client, fleet: Fleet) -> None:
    response = owner_client.get(f"{NEW}?preset=chat")
    assert response.status_code == 200
    page = response.content.decode()
    assert "New SLO for Production" in page and 'id="slo-new"' in page
    assert 'name="csrfmiddlewaretoken"' in page
    assert 'value="Chat"' in field_group(page, "name")
    assert 'value="200.0"' in field_group(page, "ttft_threshold_ms")
    assert 'value="99.0"' in field_group(page, "ttft_target")
    assert 'value="50.0"' in field_group(page, "itl_threshold_ms")
    assert '<option value="chat" selected>' in field_group(page, "preset")
    assert 'href="/slos/prod/new/?preset=rag"' in page  # the chooser
    assert "<script" not in page.split("</header>")[1]  # CSP: no inline scripts


@pytest.mark.parametrize("query", ["", "?preset=nope"])  # an unknown preset is no preset
def test_without_a_preset_the_objectives_are_blank(
    owner_client: Client, fleet: Fleet, query: str
) -> None:
    response = owner_client.get(NEW + query)
    assert response.status_code == 200
    page = response.content.decode()
    for name in ("name", "ttft_threshold_ms", "ttft_target"):
        assert "value=" not in field_group(page, name), name


def test_a_valid_post_creates_the_slo_and_goes_to_its_page(
    owner_client: Client, fleet: Fleet
) -> None:
    response = owner_client.post(NEW, new_slo_data())
    assert response.status_code == 302
    assert response["Location"] == "/slos/prod/chat-latency/"
    slo = Slo.objects.get()
    assert (slo.fleet, slo.name, slo.owner) == (fleet, "Chat latency", "llm-platform")
    assert [(o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()] == [
        ("ttft", 0.2, 0.999)
    ]


def test_a_preset_with_no_objectives_given_takes_the_presets(
    owner_client: Client, fleet: Fleet
) -> None:
    data = new_slo_data(preset="rag", name="", ttft_threshold_ms="", ttft_target="")
    response = owner_client.post(NEW, data)
    assert response.status_code == 302 and response["Location"] == "/slos/prod/rag/"
    assert [o.kind for o in Slo.objects.get().objectives.all()] == ["e2e"]


def test_a_target_of_100_is_refused_on_its_field_and_nothing_is_saved(
    owner_client: Client, fleet: Fleet
) -> None:
    response = owner_client.post(NEW, new_slo_data(ttft_target="100"))
    assert response.status_code == 200
    assert response.context["form"].errors == {"ttft_target": [TARGET_100]}
    page = response.content.decode()
    target = field_group(page, "ttft_target")
    assert TARGET_100 in target and 'aria-invalid="true"' in target
    assert TARGET_100 not in field_group(page, "ttft_threshold_ms")
    assert 'value="Chat latency"' in field_group(page, "name")  # what was typed stays
    assert not Slo.objects.exists() and not Objective.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(owner: User, fleet: Fleet) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post(NEW, new_slo_data()).status_code == 403
    assert not Slo.objects.exists()


def test_a_post_with_the_csrf_token_goes_through(owner: User, fleet: Fleet) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    client.get(NEW)
    token = client.cookies["csrftoken"].value
    response = client.post(NEW, new_slo_data(csrfmiddlewaretoken=token))
    assert response.status_code == 302 and Slo.objects.count() == 1


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_fleet_the_viewer_may_not_see_looks_missing(
    owner_client: Client, fleet: Fleet, method: str
) -> None:
    # Every signed-in user sees every fleet today (inventory.access._may_see): the rule
    # that will say otherwise is the one patched here.
    with mock.patch("inventory.access._may_see", return_value=False):
        response = getattr(owner_client, method)(NEW, new_slo_data() if method == "post" else {})
    assert response.status_code == 404
    assert owner_client.get("/slos/nope/new/").status_code == 404
    assert not Slo.objects.exists()


def test_other_methods_are_not_allowed(owner_client: Client, fleet: Fleet) -> None:
    assert owner_client.put(NEW).status_code == 405


def test_the_fleet_list_and_its_empty_state_link_to_the_new_page(
    owner_client: Client, fleet: Fleet
) -> None:
    fleet_named("empty")
    empty = owner_client.get("/slos/empty/").content.decode()
    assert '<a href="/slos/empty/new/" id="slo-new-empty">New SLO</a>' in empty
    owner_client.post(NEW, new_slo_data())
    listing = owner_client.get("/slos/prod/").content.decode()
    assert '<a href="/slos/prod/new/" id="slo-new-link">New SLO</a>' in listing
