"""Production web security: `manage.py check --deploy` is clean under the production
settings (README, "Security"), and what FLEETSCOPE_HTTPS turns on works on real requests:
the redirect to HTTPS (never for probes or Alertmanager), HSTS, secure cookies, and the
proxy's X-Forwarded-Proto trusted only as configured."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.fleetscope.test_settings_startup import assert_one_line_error, start


def production(**more: str) -> dict[str, str]:
    """Environment as the README's production section has it, behind a TLS proxy."""
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "fleetscope.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://fleetscope.example.com",
        "FLEETSCOPE_HTTPS": "true",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/fleetscope",
        "REDIS_URL": "redis://127.0.0.1:6379/15",
        **more,
    }


DEPLOY_CHECK = ("manage.py", "check", "--deploy", "--fail-level", "WARNING")


def test_check_deploy_is_clean_under_production_settings() -> None:
    result = start(production(), *DEPLOY_CHECK)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues (1 silenced)." in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


def test_check_deploy_names_what_plain_http_leaves_out() -> None:
    """Without FLEETSCOPE_HTTPS the same deployment fails the check, for the reasons
    the variable fixes."""
    result = start(production(FLEETSCOPE_HTTPS=""), *DEPLOY_CHECK)
    assert result.returncode == 1
    for check in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check in result.stderr, check


def test_a_missing_production_setting_fails_check_deploy_with_one_line() -> None:
    result = start(production(SECRET_KEY=""), *DEPLOY_CHECK)
    line = assert_one_line_error(result, "SECRET_KEY")
    assert line == (
        "fleetscope: configuration error: SECRET_KEY: required when DEBUG is off "
        "(set SECRET_KEY or SECRET_KEY_FILE)"
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("FLEETSCOPE_HSTS_SECONDS", "a year"),
        ("FLEETSCOPE_HSTS_SECONDS", "-1"),
        ("FLEETSCOPE_TRUST_X_FORWARDED_PROTO", "yes"),
        ("FLEETSCOPE_LOGIN_ATTEMPTS", "0"),
        ("FLEETSCOPE_LOGIN_WINDOW_MINUTES", "15m"),
    ],
)
def test_a_malformed_security_setting_fails_naming_it(variable: str, value: str) -> None:
    assert_one_line_error(start(production(**{variable: value}), *DEPLOY_CHECK), variable)


def settings_of(env: dict[str, str], *names: str) -> list[str]:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        f"print(*(repr(getattr(settings, n, None)) for n in {names!r}), sep='|')"
    )
    result = start(env, "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split("|")


def test_https_turns_on_redirect_hsts_and_secure_cookies() -> None:
    names = ("SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE",
             "CSRF_COOKIE_SECURE", "SECURE_PROXY_SSL_HEADER")  # fmt: skip
    assert settings_of(production(), *names) == [
        "True", "31536000", "True", "True", "('HTTP_X_FORWARDED_PROTO', 'https')"
    ]  # fmt: skip
    assert settings_of(production(FLEETSCOPE_HTTPS="false"), *names) == [
        "False", "0", "False", "False", "None"
    ]  # fmt: skip


def test_the_proxy_header_and_hsts_age_are_configurable() -> None:
    env = production(FLEETSCOPE_TRUST_X_FORWARDED_PROTO="false", FLEETSCOPE_HSTS_SECONDS="3600")
    names = ("SECURE_PROXY_SSL_HEADER", "SECURE_HSTS_SECONDS", "SECURE_SSL_REDIRECT")
    assert settings_of(env, *names) == ["None", "3600", "True"]


@pytest.fixture
def https_settings(settings: Any) -> Any:
    """What FLEETSCOPE_HTTPS=true sets, for in-process requests (SecurityMiddleware reads
    them when a client builds its handler, so each test makes its Client after this)."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    return settings


@pytest.mark.django_db
def test_plain_http_is_redirected_to_https(https_settings: Any) -> None:
    response = Client().get(reverse("login"), HTTP_HOST="127.0.0.1")
    assert response.status_code == 301
    assert response["Location"] == "https://127.0.0.1/login/"


@pytest.mark.django_db
def test_probes_and_the_alertmanager_webhook_are_never_redirected(https_settings: Any) -> None:
    client = Client()
    assert client.get(reverse("healthz")).status_code == 200
    assert client.get(reverse("readyz")).status_code in (200, 503)
    webhook = client.post(reverse("triage-alertmanager-webhook"), b"{}", "application/json")
    assert webhook.status_code != 301


@pytest.mark.django_db
def test_https_through_the_proxy_gets_hsts_and_secure_cookies(https_settings: Any) -> None:
    response = Client().get(reverse("login"), HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert response.cookies["csrftoken"]["secure"] is True


@pytest.mark.django_db
def test_without_trusting_the_proxy_its_header_is_ignored(https_settings: Any) -> None:
    https_settings.SECURE_PROXY_SSL_HEADER = None
    response = Client().get(reverse("login"), HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 301
