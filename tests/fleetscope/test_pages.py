from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.http import StreamingHttpResponse
from django.test import Client, override_settings
from django.urls import reverse

from fleetscope.context import NAVIGATION
from fleetscope.staticfinders import CARTESIAN_RELATIVE, FULL_BUNDLE, plotly_bundle

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


def served_plotly(client: Client) -> bytes:
    response = client.get("/static/vendor/plotly.min.js")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content)


def test_plotly_is_served_locally_as_the_cartesian_bundle_make_install_fetched(
    owner_client: Client,
) -> None:
    # `make test` runs scripts/ensure-js.sh (npm ci), so the suite checks what it installs.
    body = served_plotly(owner_client)
    assert body == (settings.BASE_DIR / CARTESIAN_RELATIVE).read_bytes()
    assert b"plotly.js (cartesian - minified) v" in body[:300]


def forget_finders() -> None:
    # get_finder is functools.cache'd; the stubs type it as a plain callable.
    finders.get_finder.cache_clear()  # type: ignore[attr-defined]  # see above


def test_without_the_npm_bundle_the_plotly_packages_full_bundle_is_served(
    owner_client: Client, tmp_path: Path
) -> None:
    (tmp_path / "templates").mkdir()
    with override_settings(BASE_DIR=tmp_path):
        assert plotly_bundle() == FULL_BUNDLE
        forget_finders()
        try:
            body = served_plotly(owner_client)
        finally:
            forget_finders()
    assert body == FULL_BUNDLE.read_bytes()
    assert len(body) > 4_000_000
