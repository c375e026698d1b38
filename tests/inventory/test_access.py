"""Getting a fleet for a viewer: one helper for pages, JSON, websockets and commands."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404

from inventory.access import (
    UNREACHABLE,
    Role,
    ViewScope,
    fleet_for_user,
    fleets_for_user,
    role_of,
    scrape_error_shown,
    tenants_of,
    view_scope,
)
from inventory.models import Fleet
from inventory.roles import role_grant
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet() -> Fleet:
    return Fleet.objects.create(slug="prod", name="prod")


def test_a_viewer_gets_the_fleet_by_slug_or_by_code(fleet: Fleet) -> None:
    user = user_with_role("ana", "viewer")
    assert fleet_for_user(user, slug="prod") == fleet
    assert fleet_for_user(user, code=fleet.code.hex) == fleet


def test_an_operator_at_the_shell_gets_every_fleet(fleet: Fleet) -> None:
    assert fleet_for_user(None, slug="prod") == fleet


@pytest.mark.parametrize("viewer", ["anonymous", "inactive", "no role", "other tenant"])
def test_a_viewer_who_may_not_see_the_fleet_gets_the_same_404_as_for_a_missing_one(
    fleet: Fleet, viewer: str
) -> None:
    user: User | AnonymousUser = AnonymousUser()
    if viewer == "inactive":
        user = user_with_role("bo", "viewer", is_active=False)
    elif viewer == "no role":
        user = User.objects.create_user("bo")  # signed in, given nothing: sees nothing
    elif viewer == "other tenant":
        Fleet.objects.create(slug="staging", name="staging")
        user = user_with_role("bo", "tenant", fleet_slug="staging", tenant="acme")
    with pytest.raises(Http404, match="no such fleet"):
        fleet_for_user(user, slug="prod")
    with pytest.raises(Http404, match="no such fleet"):
        fleet_for_user(User.objects.create_user("cy"), slug="nope")


def test_a_malformed_code_is_no_such_fleet(fleet: Fleet) -> None:
    with pytest.raises(Http404):
        fleet_for_user(None, code="not-a-uuid")


def test_exactly_one_of_slug_and_code_names_the_fleet(fleet: Fleet) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        fleet_for_user(None)
    with pytest.raises(ValueError, match="exactly one"):
        fleet_for_user(None, slug="prod", code=fleet.code.hex)


def test_the_view_scope_of_a_fleet_keys_caches_and_live_groups_by_that_fleet(fleet: Fleet) -> None:
    other = Fleet.objects.create(slug="staging", name="staging")
    scope = view_scope(None, fleet)
    assert scope == ViewScope(fleet)
    assert scope.key == f"fleet.{fleet.code.hex}"
    assert scope.key != view_scope(None, other).key


def test_roles_rank_and_a_superuser_is_an_admin(fleet: Fleet) -> None:
    assert role_of(None) == Role.ADMIN  # the operator at the shell
    assert role_of(AnonymousUser()) == Role.NONE
    assert role_of(User.objects.create_user("plain")) == Role.NONE
    assert role_of(User.objects.create_superuser("root")) == Role.ADMIN
    for name, role in (("viewer", Role.VIEWER), ("oncall", Role.ONCALL), ("admin", Role.ADMIN)):
        assert role_of(user_with_role(f"u-{name}", name)) == role
    tenant = user_with_role("t", "tenant", fleet_slug="prod", tenant="acme")
    assert role_of(tenant) == Role.TENANT
    assert Role.TENANT < Role.VIEWER < Role.ONCALL < Role.ADMIN


def test_a_tenant_viewer_sees_only_granted_fleets_and_one_of_their_tenants(fleet: Fleet) -> None:
    Fleet.objects.create(slug="staging", name="staging")
    user = user_with_role("t", "tenant", fleet_slug="prod", tenant="globex")
    role_grant(user, "tenant", fleet_slug="prod", tenant="acme")
    assert [f.slug for f in fleets_for_user(user)] == ["prod"]
    assert tenants_of(user, fleet) == ("acme", "globex")
    assert view_scope(user, fleet).tenant == "acme"
    assert view_scope(user, fleet, tenant="globex").tenant == "globex"
    with pytest.raises(Http404, match="no such tenant"):
        view_scope(user, fleet, tenant="initech")
    # Two tenants' views never share a cache entry or a live group.
    assert view_scope(user, fleet).key != view_scope(user, fleet, tenant="globex").key
    assert view_scope(user, fleet).key != view_scope(None, fleet).key


@pytest.mark.parametrize(
    ("kind", "shown_to_viewer"),
    [
        ("refused", UNREACHABLE),
        ("timeout", UNREACHABLE),
        ("connection", UNREACHABLE),
        ("http_status", "HTTP 500 from the endpoint"),
    ],
)
def test_scrape_errors_that_tell_ports_apart_read_alike_to_all_but_admins(
    fleet: Fleet, kind: str, shown_to_viewer: str
) -> None:
    message = "HTTP 500 from the endpoint" if kind == "http_status" else f"connection {kind}"
    viewer, admin = user_with_role("v", "viewer"), user_with_role("a", "admin")
    assert scrape_error_shown(message, kind, viewer=viewer) == shown_to_viewer
    assert scrape_error_shown(message, kind, viewer=admin) == message
