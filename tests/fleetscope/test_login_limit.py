"""Login rate limiting (fleetscope.login_limit): five failed logins for one username, or
from one client address, within fifteen minutes, and further attempts get a 429 without
their password being checked, until the window ends. The clock is moved with
time-machine; the counts live in the real cache the settings configure (in memory here,
Redis where a test says so)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.test import Client, override_settings
from django.urls import reverse

from fleetscope import login_limit
from tests.conftest import TEST_REDIS_URL
from tests.fleetscope.test_settings_startup import start

pytestmark = pytest.mark.django_db

PASSWORD = "owner-password-1"  # tests/conftest.py's owner
REFUSED = "Too many failed logins for this username or from this address."
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def attempt(client: Client, username: str, password: str, address: str = "10.0.0.1") -> Any:
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


def fail(client: Client, username: str, address: str = "10.0.0.1", times: int = 1) -> None:
    for _ in range(times):
        response = attempt(client, username, "wrong-password", address)
        assert response.status_code == 200
        assert "didn't match" in response.content.decode()


@pytest.fixture
def clock() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(START, tick=False) as traveller:
        yield traveller


@pytest.fixture
def failures_seen() -> Iterator[list[str]]:
    """Usernames whose password Django's authentication checked and found wrong."""
    seen: list[str] = []

    def receiver(sender: object, credentials: dict[str, Any], **kwargs: object) -> None:
        seen.append(credentials.get("username", ""))

    user_login_failed.connect(receiver)
    yield seen
    user_login_failed.disconnect(receiver)


def test_login_is_refused_after_five_wrong_passwords(
    client: Client, owner: User, failures_seen: list[str]
) -> None:
    fail(client, "owner", times=5)
    assert failures_seen == ["owner"] * 5

    response = attempt(client, "owner", PASSWORD)
    assert response.status_code == 429
    html = response.content.decode()
    assert REFUSED in html and "Try again in 15 minutes." in html
    assert "didn't match" not in html
    assert int(response["Retry-After"]) == 15 * 60
    assert "_auth_user_id" not in client.session
    # Refused before the password was checked: no authentication ran.
    assert failures_seen == ["owner"] * 5
    # The page still offers the form, with the username kept.
    assert 'name="password"' in html and 'value="owner"' in html


def test_a_different_username_from_another_address_still_logs_in(
    client: Client, owner: User
) -> None:
    User.objects.create_user("second", password="second-password-1")
    fail(client, "owner", times=5)
    assert attempt(client, "owner", PASSWORD).status_code == 429

    response = attempt(Client(), "second", "second-password-1", address="10.0.0.2")
    assert response.status_code == 302
    assert response["Location"] == reverse("dashboard-fleet-list")


def test_the_username_count_holds_from_every_address_and_in_any_case(
    client: Client, owner: User
) -> None:
    for i, spelling in enumerate(["owner", "OWNER", " owner", "Owner", "ｏｗｎｅｒ"]):
        fail(client, spelling, address=f"10.0.1.{i}")
    response = attempt(Client(), "owner", PASSWORD, address="10.0.9.9")
    assert response.status_code == 429
    assert REFUSED in response.content.decode()


def test_the_address_count_holds_for_every_username(client: Client, owner: User) -> None:
    for i in range(5):
        fail(client, f"guess-{i}", address="10.0.0.7")
    assert attempt(client, "owner", PASSWORD, address="10.0.0.7").status_code == 429
    assert attempt(Client(), "owner", PASSWORD, address="10.0.0.8").status_code == 302


def test_an_ipv6_client_is_counted_by_its_slash_64(client: Client, owner: User) -> None:
    for i in range(5):
        fail(client, f"guess-{i}", address=f"2001:db8:0:7::{i + 1:x}")
    assert attempt(client, "owner", PASSWORD, address="2001:db8:0:7::ffff").status_code == 429
    assert attempt(Client(), "owner", PASSWORD, address="2001:db8:0:8::1").status_code == 302
    # An IPv4 client seen through an IPv6 socket is the IPv4 address.
    assert login_limit.address_key("::ffff:10.0.0.1") == login_limit.address_key("10.0.0.1")


def test_login_works_again_once_the_window_has_passed(
    client: Client, owner: User, clock: time_machine.Traveller
) -> None:
    fail(client, "owner", times=5)
    clock.shift(timedelta(minutes=14))
    response = attempt(client, "owner", PASSWORD)
    assert response.status_code == 429
    assert "Try again in 1 minute." in response.content.decode()
    assert response["Retry-After"] == "60"

    clock.shift(timedelta(minutes=1))
    response = attempt(client, "owner", PASSWORD)
    assert response.status_code == 302
    assert "_auth_user_id" in client.session


def test_refused_attempts_neither_count_nor_extend_the_window(
    client: Client, owner: User, clock: time_machine.Traveller
) -> None:
    fail(client, "owner", times=5)
    for _ in range(2):
        clock.shift(timedelta(minutes=5))
        assert attempt(client, "owner", "wrong-password").status_code == 429
    # The window opened at the first failure, 15 minutes ago: it is over.
    clock.shift(timedelta(minutes=5))
    assert attempt(client, "owner", PASSWORD).status_code == 302


def test_a_successful_login_clears_the_usernames_count(client: Client, owner: User) -> None:
    fail(client, "owner", address="10.0.0.1", times=4)
    assert attempt(client, "owner", PASSWORD, address="10.0.0.1").status_code == 302
    client.logout()
    # Uncleared, these four would make nine failures for the name.
    fail(client, "owner", address="10.0.0.2", times=4)
    assert attempt(client, "owner", PASSWORD, address="10.0.0.2").status_code == 302


def test_a_successful_login_leaves_the_addresss_count(client: Client, owner: User) -> None:
    User.objects.create_user("second", password="second-password-1")
    fail(client, "someone-else", address="10.0.0.3", times=4)
    assert attempt(client, "owner", PASSWORD, address="10.0.0.3").status_code == 302
    client.logout()
    fail(client, "another-guess", address="10.0.0.3")
    response = attempt(client, "second", "second-password-1", address="10.0.0.3")
    assert response.status_code == 429


def test_the_limit_and_window_are_settings(client: Client, owner: User, settings: Any) -> None:
    settings.FLEETSCOPE_LOGIN_ATTEMPTS = 2
    settings.FLEETSCOPE_LOGIN_WINDOW_MINUTES = 60
    fail(client, "owner", times=2)
    response = attempt(client, "owner", PASSWORD)
    assert response.status_code == 429
    assert "Try again in 60 minutes." in response.content.decode()


def test_the_admins_login_page_sends_to_the_limited_one(client: Client, owner: User) -> None:
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next=%2Fadmin%2F"
    # Its form posts there too; the password is not checked and nobody is logged in.
    response = client.post("/admin/login/", {"username": "owner", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert "_auth_user_id" not in client.session
    # The admin's own redirect for a stranger lands on the limited page.
    assert client.get("/admin/", follow=True).redirect_chain[-1][0].startswith("/login/")


def test_the_counts_are_shared_between_processes_through_redis(owner: User) -> None:
    """The production cache: failures counted here refuse the name in another process
    started with REDIS_URL, as a second web worker would be."""
    username = f"shared-{uuid.uuid4().hex[:12]}"
    addresses = [f"10.0.3.{i}" for i in range(5)]
    counted = [login_limit.username_key(username), *map(login_limit.address_key, addresses)]
    keys = [f"{key}:{part}" for key in counted for part in ("until", "n")]
    redis_cache = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": TEST_REDIS_URL,
        }
    }
    with override_settings(CACHES=redis_cache):
        try:
            for address in addresses:
                fail(Client(), username, address=address)
            result = start(
                {"REDIS_URL": TEST_REDIS_URL},
                "-c",
                "import django; django.setup(); from fleetscope import login_limit; "
                f"r = login_limit.refusal({username!r}, '10.0.4.1'); "
                "print(r.reason, r.retry_after > 14 * 60)",
            )
        finally:
            cache.delete_many(keys)  # the test's Redis database is shared: leave it clean
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["username", "True"]


def test_a_failing_cache_lets_logins_through_and_logs_it(
    owner: User, closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A Redis that refuses connections (a real one, on a port nothing listens on): the
    limit cannot count, and FleetScope stays usable during the outage."""
    down = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port}/0",
        }
    }
    with override_settings(CACHES=down), caplog.at_level(logging.ERROR, "fleetscope"):
        client = Client()
        fail(client, "owner", times=6)
        assert attempt(client, "owner", PASSWORD).status_code == 302
    assert "login limit: the cache failed" in caplog.text


def test_a_refused_page_is_the_login_template(owner: User) -> None:
    """The refusal renders through LoginView like any other login page: same template,
    the `next` it was given kept for the next try."""
    for _ in range(5):
        login_limit.record_failure("owner", "10.0.0.1")
    assert login_limit.refusal("owner", "10.0.0.9") is not None
    assert login_limit.refusal("someone", "10.0.0.9") is None
    client = Client()
    response = client.post(
        f"{reverse('login')}?next=/incidents/",
        {"username": "owner", "password": PASSWORD},
        REMOTE_ADDR="10.0.0.9",
    )
    assert response.status_code == 429
    assert [t.name for t in response.templates][0] == "registration/login.html"
    assert 'name="next" value="/incidents/"' in response.content.decode()
