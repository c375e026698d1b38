"""Every URL pattern the resolver knows, for every role and for a stranger: who gets the
page, who is sent to log in, who is refused. The expectations are written here, not read
from the views' marks, and a pattern missing from them fails: a new page is classified
before it lands. The websocket routes are enumerated too (their role checks are in
tests/dashboard/test_consumers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from blindspots.models import AuditSource
from capacity.models import CostReportRecord
from fleetscope.routing import websocket_urlpatterns
from inventory.access import Role
from inventory.models import Fleet
from slo.models import Slo
from tests.roles import user_with_role
from tests.triage.factories import a_walk, an_incident
from triage.incidents import incident_walk_record
from triage.models import Runbook

pytestmark = pytest.mark.django_db

V, ONC, A, T = Role.VIEWER, Role.ONCALL, Role.ADMIN, Role.TENANT
OPEN = Role.NONE  # served to anyone, signed in or not
# url name -> (role for GET, role for POST); None: the method is not served (405).
EXPECTED: dict[str, tuple[Role | None, Role | None]] = {
    "healthz": (OPEN, None),
    "readyz": (OPEN, None),
    "favicon": (OPEN, None),
    "login": (OPEN, OPEN),
    "admin-login": (OPEN, OPEN),
    "dashboard-fleet-list": (T, None),
    "dashboard-fleet-overview": (V, None),
    "dashboard-fleet-overview-json": (V, None),
    "dashboard-fleet-group": (V, None),
    "inventory-overview": (V, None),
    "inventory-fleet-detail": (V, A),
    "inventory-fleet-discover": (None, A),
    "triage-incident-list": (V, None),
    "triage-incident-new": (ONC, ONC),
    "triage-alertmanager-webhook": (None, OPEN),
    "triage-runbook-list": (V, None),
    "triage-runbook-detail": (V, None),
    "triage-incident-detail": (V, None),
    "triage-incident-note": (None, ONC),
    "triage-incident-status": (None, ONC),
    "triage-incident-walk": (None, ONC),
    "triage-incident-evidence-md": (V, None),
    "triage-incident-evidence-json": (V, None),
    "slo-list": (V, None),
    "slo-fleet-list": (V, None),
    "slo-new": (A, A),
    "slo-detail": (V, None),
    "slo-detail-json": (V, None),
    "blindspots-list": (V, None),
    "blindspots-fleet": (V, None),
    "blindspots-fleet-json": (V, None),
    "blindspots-upload": (None, ONC),
    "blindspots-run": (None, ONC),
    "blindspots-source-delete": (None, ONC),
    "capacity-review": (V, None),
    "capacity-profile-new": (A, A),
    "capacity-fleet": (V, None),
    "capacity-fleet-json": (V, None),
    "capacity-cost": (T, None),
    "capacity-cost-fleet": (T, None),
    "capacity-cost-csv": (T, None),
    "capacity-cost-json": (T, None),
    "capacity-cost-report-csv": (V, None),
}
# Patterns handled outside the role middleware: the admin checks staff and permissions
# itself (below), logout is a POST for the signed-in, and the webhook checks its token.
OWN_CHECKS = {"logout"}
ROLES = ("anonymous", "none", "tenant", "viewer", "oncall", "admin")
RANK = {"none": Role.NONE, "tenant": T, "viewer": V, "oncall": ONC, "admin": A}


def patterns(
    resolver: URLResolver | None = None, prefix: str = ""
) -> Iterator[tuple[str, URLPattern]]:
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin":
                continue
            yield from patterns(entry, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


@pytest.fixture
def world() -> dict[str, Any]:
    fleet = Fleet.objects.create(slug="prod", name="prod")
    slo = Slo.objects.create(fleet=fleet, slug="chat", name="chat")
    incident = an_incident(fleet)
    incident_walk_record(incident, a_walk())
    runbook = Runbook.objects.create(
        slug="matrix-runbook", title="Matrix runbook", body_markdown="steps"
    )
    source = AuditSource.objects.create(
        fleet=fleet, kind="rules", name="r.yml", content="groups: []"
    )
    report = CostReportRecord.objects.create(
        fleet=fleet,
        period_start=datetime(2026, 10, 1, tzinfo=UTC),
        period_end=datetime(2026, 11, 1, tzinfo=UTC),
        content={},
        csv="tenant,cost_usd\n",
    )
    return {
        "slug": "prod",
        "fleet_slug": "prod",
        "slo_slug": slo.slug,
        "incident_id": incident.pk,
        "group": "latency",
        "source_id": source.pk,
        "report_id": report.pk,
        "slug_runbook": runbook.slug,
    }


def url_of(pattern: URLPattern, world: dict[str, Any]) -> str:
    names = list(pattern.pattern.regex.groupindex)
    kwargs = {
        n: world["slug_runbook"] if pattern.name == "triage-runbook-detail" else world[n]
        for n in names
    }
    return reverse(str(pattern.name), kwargs=kwargs)


def client_as(role: str) -> Client:
    client = Client()
    if role == "anonymous":
        return client
    if role == "none":
        user = User.objects.create_user("nobody")
    elif role == "tenant":
        user = user_with_role("acme-viewer", "tenant", fleet_slug="prod", tenant="acme")
    else:
        user = user_with_role(f"a-{role}", role)
    client.force_login(user)
    return client


def test_every_pattern_has_an_expectation_and_no_expectation_is_stale() -> None:
    names = {str(p.name) for _, p in patterns()}
    assert names - OWN_CHECKS == set(EXPECTED), (
        names - OWN_CHECKS - set(EXPECTED),
        set(EXPECTED) - names,
    )


def test_the_websocket_routes_are_the_ones_the_consumer_tests_cover() -> None:
    assert [route.name for route in websocket_urlpatterns] == ["ws-fleet-overview"]


def _expected(role: str, needed: Role | None, other: Role | None, name: str) -> set[int]:
    """The statuses `role` may get for one method of a pattern: `needed` is that method's
    role (None: not served), `other` the other method's."""
    gate = needed if needed is not None else other
    assert gate is not None
    if gate == OPEN:
        # Its own answer: a webhook without its token is a 401, or 503 when none is set.
        return {405} if needed is None else {200, 302, 400, 401, 403, 503}
    if role == "anonymous":
        # Sent to log in; a signed-out poller of the overview's JSON gets its own 401.
        if name == "dashboard-fleet-overview-json":
            return {405} if needed is None else {401}
        return {302}
    if RANK[role] < gate:
        return {403}
    if needed is None:
        return {405}
    return {200, 302, 400}  # the page, a redirect after a POST, or a form's own error


@pytest.mark.parametrize("role", ROLES)
def test_each_role_gets_exactly_the_pages_it_may_use(role: str, world: dict[str, Any]) -> None:
    client = client_as(role)
    wrong = []
    for _, pattern in patterns():
        name = str(pattern.name)
        if name in OWN_CHECKS:
            continue
        url = url_of(pattern, world)
        get, post = EXPECTED[name]
        for method, needed, other in (("get", get, post), ("post", post, get)):
            status = getattr(client, method)(url).status_code
            allowed = _expected(role, needed, other, name)
            if status not in allowed:
                wrong.append((method.upper(), url, status, sorted(allowed)))
    assert not wrong, wrong


@pytest.mark.parametrize("role", ROLES)
def test_the_django_admin_is_for_admins_only(role: str, world: dict[str, Any]) -> None:
    client = client_as(role)
    response = client.get("/admin/")
    if role == "admin":
        assert response.status_code == 200
        assert client.get("/admin/slo/slo/").status_code == 200
    else:
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_refusal_names_the_role_it_needs(world: dict[str, Any]) -> None:
    response = client_as("viewer").get(reverse("triage-incident-new"))
    assert response.status_code == 403
    assert "Your role (viewer) may not use this page: it needs on-call" in response.content.decode()
    json_refusal = client_as("tenant").get(reverse("slo-detail-json", args=["prod", "chat"]))
    assert json_refusal.status_code == 403 and "needs viewer" in json_refusal.json()["error"]


def test_a_tenant_viewer_lands_on_cost_and_a_foreign_fleet_is_a_404(world: dict[str, Any]) -> None:
    Fleet.objects.create(slug="other", name="other")
    client = client_as("tenant")
    assert client.get("/")["Location"] == reverse("capacity-cost")
    assert client.get(reverse("capacity-cost-json", args=["other"])).status_code == 404
    assert (
        client.get(reverse("capacity-cost-json", args=["prod"]), {"tenant": "globex"}).status_code
        == 404
    )
