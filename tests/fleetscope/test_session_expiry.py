"""Idle session expiry (fleetscope.sessions): a session ends SESSION_COOKIE_AGE (12 hours
by default, FLEETSCOPE_SESSION_IDLE_MINUTES) after its user's last page or action. The
clock is moved with time-machine; the sessions are Django's real database sessions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from inventory.tokens import token_create
from tests.fleetscope.test_settings_startup import assert_one_line_error, start

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PAGE = reverse("dashboard-fleet-list")
IDLE = timedelta(hours=12)


@pytest.fixture
def clock() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def signed_in(clock: time_machine.Traveller) -> Client:
    client = Client()
    # A superuser: whatever roles decide, the page is theirs, so only the session matters.
    client.force_login(User.objects.create_superuser("admin", password="admin-password-1"))
    return client


def goes_to_login(client: Client) -> bool:
    response = client.get(PAGE)
    if response.status_code == 302:
        assert response["Location"] == f"{reverse('login')}?next={PAGE}"
        return True
    assert response.status_code == 200
    return False


def test_the_default_idle_time_is_twelve_hours() -> None:
    assert timedelta(seconds=settings.SESSION_COOKIE_AGE) == IDLE
    assert not settings.SESSION_EXPIRE_AT_BROWSER_CLOSE


def test_a_session_idle_for_twelve_hours_redirects_to_login(
    signed_in: Client, clock: time_machine.Traveller
) -> None:
    clock.shift(IDLE + timedelta(seconds=1))
    assert goes_to_login(signed_in)
    assert "_auth_user_id" not in signed_in.session


def test_each_page_extends_the_session(signed_in: Client, clock: time_machine.Traveller) -> None:
    for _ in range(4):  # 44 hours in all, never 12 idle
        clock.shift(timedelta(hours=11))
        assert not goes_to_login(signed_in)
    # The cookie says so too: it lives as long as the session from the last request.
    assert signed_in.cookies[settings.SESSION_COOKIE_NAME]["max-age"] == IDLE.total_seconds()
    clock.shift(IDLE + timedelta(minutes=1))
    assert goes_to_login(signed_in)


def test_requests_within_a_minute_write_the_session_once(
    signed_in: Client, clock: time_machine.Traveller
) -> None:
    """The extension is written at most once a minute: a burst of requests does not
    write the session row (and send a new cookie) for each."""
    cookie = settings.SESSION_COOKIE_NAME
    clock.shift(timedelta(minutes=5))
    assert cookie in signed_in.get(PAGE).cookies
    clock.shift(timedelta(seconds=30))
    assert cookie not in signed_in.get(PAGE).cookies
    clock.shift(timedelta(seconds=31))
    assert cookie in signed_in.get(PAGE).cookies


def test_the_live_overviews_polling_does_not_keep_a_session_alive(
    signed_in: Client, clock: time_machine.Traveller
) -> None:
    """Background polls are not activity: a screen left on the overview signs out when
    nobody has used it for the idle time (the poll then gets a 401 with a login link)."""
    poll = reverse("dashboard-fleet-overview-json", args=["no-such-fleet"])
    for _ in range(12):
        clock.shift(timedelta(hours=1))
        signed_in.get(poll)
    clock.shift(timedelta(seconds=1))
    assert goes_to_login(signed_in)


def test_a_token_request_gets_no_session(clock: time_machine.Traveller) -> None:
    """An API token signs its request in without a session: extending one would create a
    session row, and a cookie, per request."""
    user = User.objects.create_superuser("grafana", password="grafana-password-1")
    secret = token_create(name="grafana-read", user=user, scope="read").secret
    client = Client(headers={"Authorization": f"Bearer {secret}"})
    for _ in range(2):
        clock.shift(timedelta(minutes=2))
        response = client.get(reverse("blindspots-fleet-json", args=["no-such-fleet"]))
        assert response.status_code == 404
        assert settings.SESSION_COOKIE_NAME not in response.cookies


def test_the_idle_time_comes_from_the_environment() -> None:
    result = start(
        {"FLEETSCOPE_SESSION_IDLE_MINUTES": "30"},
        "-c",
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.SESSION_COOKIE_AGE)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1800"


def test_an_idle_time_under_five_minutes_fails_naming_it() -> None:
    line = assert_one_line_error(
        start({"FLEETSCOPE_SESSION_IDLE_MINUTES": "2"}), "FLEETSCOPE_SESSION_IDLE_MINUTES"
    )
    assert "at least 5" in line
