from __future__ import annotations

import pytest
from django.http import StreamingHttpResponse
from django.test import Client
from django.urls import reverse

from fleetscope.context import NAVIGATION

SECTION_URLS = [item.url_name for item in NAVIGATION]


@pytest.mark.django_db
@pytest.mark.parametrize("url_name", SECTION_URLS)
def test_every_section_requires_login(client: Client, url_name: str) -> None:
    url = reverse(url_name)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={url}"


@pytest.mark.parametrize("url_name", SECTION_URLS)
def test_every_section_renders_the_navigation_for_a_logged_in_user(
    owner_client: Client, url_name: str
) -> None:
    response = owner_client.get(reverse(url_name))
    assert response.status_code == 200
    html = response.content.decode()
    for item in NAVIGATION:
        assert f">{item.label}</a>" in html
    assert 'aria-current="page"' in html


def test_fleet_page_without_fleets_says_no_fleet_yet(owner_client: Client) -> None:
    html = owner_client.get(reverse("dashboard-fleet-list")).content.decode()
    assert "No fleet yet." in html


@pytest.mark.django_db
def test_login_page_is_public_and_sets_a_strict_content_security_policy(client: Client) -> None:
    response = client.get(reverse("login"))
    assert response.status_code == 200
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


@pytest.mark.django_db
def test_wrong_password_shows_an_error_and_logs_nobody_in(client: Client, owner: object) -> None:
    response = client.post(reverse("login"), {"username": "owner", "password": "wrong"})
    assert response.status_code == 200
    assert "didn't match" in response.content.decode()
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_login_without_csrf_token_is_refused(owner: object) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post(reverse("login"), {"username": "owner", "password": "owner-password-1"})
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session


def test_plotly_is_served_locally_from_the_installed_package(owner_client: Client) -> None:
    response = owner_client.get("/static/vendor/plotly.min.js")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    body = b"".join(response.streaming_content)
    assert len(body) > 1_000_000
    assert b"plotly" in body[:2000].lower()
