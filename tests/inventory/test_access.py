"""Getting a fleet for a viewer: one helper for pages, JSON, websockets and commands."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.http import Http404

from inventory.access import ViewScope, fleet_for_user, view_scope
from inventory.models import Fleet

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet() -> Fleet:
    return Fleet.objects.create(slug="prod", name="prod")


def test_a_signed_in_user_gets_the_fleet_by_slug_or_by_code(fleet: Fleet) -> None:
    user = User.objects.create_user("ana")
    assert fleet_for_user(user, slug="prod") == fleet
    assert fleet_for_user(user, code=fleet.code.hex) == fleet


def test_an_operator_at_the_shell_gets_every_fleet(fleet: Fleet) -> None:
    assert fleet_for_user(None, slug="prod") == fleet


@pytest.mark.parametrize("viewer", ["anonymous", "inactive"])
def test_a_viewer_who_may_not_see_the_fleet_gets_the_same_404_as_for_a_missing_one(
    fleet: Fleet, viewer: str
) -> None:
    user = AnonymousUser() if viewer == "anonymous" else User.objects.create_user("bo")
    if viewer == "inactive":
        user.is_active = False
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
