"""The SLO admin: the same checks as the services, so a target of 100% is an error there too."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from inventory.models import Fleet
from slo.models import Objective, Slo
from tests.slo.conftest import engine_instances

pytestmark = pytest.mark.django_db

ADD = "/admin/slo/slo/add/"


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("admin", password="admin-password-1"))
    return client


def post_data(fleet: Fleet, *objectives: tuple[str, str, str], **given: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "fleet": str(fleet.pk),
        "name": "Chat latency",
        "slug": "chat-latency",
        "window_days": "28",
        "bad_finish_reasons": ["abort", "error"],
        "min_requests_to_page": "100",
        "min_bad_events": "10",
        "objectives-TOTAL_FORMS": str(len(objectives)),
        "objectives-INITIAL_FORMS": "0",
        "objectives-MIN_NUM_FORMS": "0",
        "objectives-MAX_NUM_FORMS": "1000",
    }
    for i, (kind, threshold, target) in enumerate(objectives):
        data |= {
            f"objectives-{i}-kind": kind,
            f"objectives-{i}-threshold_seconds": threshold,
            f"objectives-{i}-target": target,
        }
    return data | given


def errors_of(response: Any) -> str:
    assert response.status_code == 200  # the form came back instead of a redirect
    return response.content.decode()


def test_admin_add_page_renders_with_the_objective_inline(admin_client: Client) -> None:
    response = admin_client.get(ADD)
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="objectives-0-target"' in page
    assert 'name="instances_text"' in page


def test_admin_saves_a_valid_slo_with_its_objectives(admin_client: Client, fleet: Fleet) -> None:
    instance = engine_instances(fleet)[0]
    data = post_data(fleet, ("ttft", "0.2", "0.99"), instances_text=instance)
    response = admin_client.post(ADD, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    slo = Slo.objects.get()
    assert slo.instances == [instance]
    assert [(o.kind, o.threshold_seconds, o.target) for o in slo.objectives.all()] == [
        ("ttft", 0.2, 0.99)
    ]


@pytest.mark.parametrize(
    ("objective", "message"),
    [
        (("ttft", "0.2", "1.0"), "a target of 100% leaves no error budget; use at most 99.999%"),
        (("ttft", "0.2", "1.5"), "a target of 150% is more than 100%"),
        (("ttft", "0", "0.99"), "must be more than 0 seconds, not 0"),
        (("ttft", "", "0.99"), "a ttft objective needs a threshold in seconds"),
        (("success", "1", "0.99"), "the success objective counts finishes: it takes no threshold"),
    ],
)
def test_admin_shows_an_invalid_objective_and_saves_nothing(
    admin_client: Client, fleet: Fleet, objective: tuple[str, str, str], message: str
) -> None:
    page = errors_of(admin_client.post(ADD, post_data(fleet, objective)))
    assert message in page
    assert not Slo.objects.exists()
    assert not Objective.objects.exists()


def test_admin_refuses_an_objective_the_fleet_does_not_expose(
    admin_client: Client, old_fleet: Fleet
) -> None:
    page = errors_of(admin_client.post(ADD, post_data(old_fleet, ("tpot", "0.05", "0.99"))))
    assert "this fleet does not expose tpot" in page
    assert not Slo.objects.exists()


def test_admin_refuses_an_slo_without_objectives(admin_client: Client, fleet: Fleet) -> None:
    page = errors_of(admin_client.post(ADD, post_data(fleet)))
    assert "give at least one objective" in page
    assert not Slo.objects.exists()


def test_admin_refuses_an_instance_outside_the_fleet(admin_client: Client, fleet: Fleet) -> None:
    data = post_data(fleet, ("ttft", "0.2", "0.99"), instances_text="10.0.0.1:8000")
    page = errors_of(admin_client.post(ADD, data))
    assert "10.0.0.1:8000 is not an enabled endpoint of fleet prod" in page
    assert not Slo.objects.exists()
