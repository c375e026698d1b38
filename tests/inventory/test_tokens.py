"""API tokens: shown once and kept only as a digest, scoped (a read token opens GET of the
exports as its user's role allows; an Alertmanager token opens the webhook and nothing
else), revocable, and refused with a clear JSON error otherwise."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.urls import reverse

from inventory.models import ApiToken, Fleet
from inventory.tokens import token_create, token_revoke
from slo.models import Slo
from tests.roles import user_with_role
from tests.triage.factories import a_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet() -> Fleet:
    fleet = Fleet.objects.create(slug="prod", name="prod")
    Slo.objects.create(fleet=fleet, slug="chat", name="chat")
    return fleet


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def test_the_secret_is_shown_once_and_only_its_digest_is_stored(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    user_with_role("grafana", "viewer")
    call_command("api_token", "create", "grafana-read", "--user", "grafana", "--scope", "read")
    secret = capsys.readouterr().out.splitlines()[1].rsplit(" ", 1)[1]
    assert secret.startswith("fs_") and len(secret) > 40
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM inventory_apitoken")
        stored = " ".join(str(v) for row in cursor.fetchall() for v in row)
    assert secret not in stored and secret[10:] not in stored
    call_command("api_token", "list")
    listed = capsys.readouterr().out
    assert "grafana-read" in listed and secret not in listed and "last used never" in listed


def test_a_read_token_opens_the_exports_as_its_users_role_and_nothing_else(fleet: Fleet) -> None:
    secret = token_create(name="r", user=user_with_role("bot", "viewer"), scope="read").secret
    client = Client()
    json_url = reverse("slo-detail-json", args=["prod", "chat"])
    assert client.get(json_url, headers=bearer(secret)).status_code == 200
    assert ApiToken.objects.get(name="r").last_used_at is not None
    page = client.get(reverse("slo-detail", args=["prod", "chat"]), headers=bearer(secret))
    assert (
        page.status_code == 403 and "only GET of the JSON, CSV and Markdown" in page.json()["error"]
    )
    post = client.post(reverse("triage-incident-new"), {"fleet": "prod"}, headers=bearer(secret))
    assert post.status_code == 403
    # The token acts with its user's role: a viewer's token cannot read an admin's page.
    assert client.get(json_url, headers=bearer(secret)).status_code == 200
    tenant_secret = token_create(
        name="t", user=user_with_role("t", "tenant", fleet_slug="prod", tenant="acme"), scope="read"
    ).secret
    refused = client.get(json_url, headers=bearer(tenant_secret))
    assert refused.status_code == 403 and "needs viewer" in refused.json()["error"]


@pytest.mark.parametrize("case", ["unknown", "revoked", "wrong scope"])
def test_an_unknown_revoked_or_wrong_scope_token_is_a_401(fleet: Fleet, case: str) -> None:
    user = user_with_role("bot", "viewer")
    scope = "alertmanager" if case == "wrong scope" else "read"
    secret = token_create(name="r", user=user, scope=scope).secret
    if case == "revoked":
        token_revoke("r")
    if case == "unknown":
        secret = "fs_" + "x" * 43
    response = Client().get(
        reverse("slo-detail-json", args=["prod", "chat"]), headers=bearer(secret)
    )
    assert response.status_code == 401
    assert response.json() == {"error": "unknown, revoked or wrong-scope token"}
    assert response["WWW-Authenticate"] == 'Bearer realm="fleetscope"'


def test_an_alertmanager_token_opens_the_webhook_and_a_read_token_does_not(
    fleet: Fleet, settings: Any
) -> None:
    settings.FLEETSCOPE_ALERTMANAGER_TOKEN = ""  # tokens only
    user = user_with_role("am", "oncall")
    hook = token_create(name="am", user=user, scope="alertmanager").secret
    read = token_create(name="r", user=user, scope="read").secret
    body = a_payload()
    url = reverse("triage-alertmanager-webhook")
    client = Client(enforce_csrf_checks=True)
    refused = client.post(url, body, content_type="application/json", headers=bearer(read))
    assert refused.status_code == 401
    accepted = client.post(url, body, content_type="application/json", headers=bearer(hook))
    assert accepted.status_code == 200, accepted.content
    token_revoke("am")
    again = client.post(url, body, content_type="application/json", headers=bearer(hook))
    assert again.status_code == 503  # no live webhook token and none in the settings


def test_bad_token_commands_exit_2_with_one_line(fleet: Fleet) -> None:
    user_with_role("bot", "viewer")
    for args, message in (
        (("create", "x", "--user", "nobody", "--scope", "read"), "no user 'nobody'"),
        (("revoke", "nope"), "no token named 'nope'"),
    ):
        with pytest.raises(CommandError, match=message) as raised:
            call_command("api_token", *args)
        assert raised.value.returncode == 2
    call_command("api_token", "create", "x", "--user", "bot", "--scope", "read")
    with pytest.raises(CommandError, match="a token named 'x' exists already"):
        call_command("api_token", "create", "x", "--user", "bot", "--scope", "read")
