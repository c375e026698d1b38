"""`manage.py grant_role`: one role per user, admins are staff with the admin's permissions,
a tenant viewer needs a fleet and a tenant, and bad arguments exit 2 with one line."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory.access import Role, role_of
from inventory.models import Fleet, TenantGrant

pytestmark = pytest.mark.django_db


@pytest.fixture
def ana() -> User:
    Fleet.objects.create(slug="prod", name="prod")
    return User.objects.create_user("ana")


def fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)  # role_of keeps a per-object memo


def test_a_grant_replaces_the_role_the_user_had(ana: User) -> None:
    call_command("grant_role", "ana", "oncall")
    assert role_of(fresh(ana)) == Role.ONCALL
    call_command("grant_role", "ana", "viewer")
    assert role_of(fresh(ana)) == Role.VIEWER
    assert list(fresh(ana).groups.values_list("name", flat=True)) == ["viewer"]


def test_an_admin_is_staff_and_may_change_slos_in_the_django_admin(ana: User) -> None:
    call_command("grant_role", "ana", "admin")
    user = fresh(ana)
    assert user.is_staff and not user.is_superuser
    assert user.has_perm("slo.change_slo") and user.has_perm("auth.add_user")
    call_command("grant_role", "ana", "--revoke")
    user = fresh(ana)
    assert not user.is_staff and role_of(user) == Role.NONE


def test_a_tenant_viewer_is_granted_tenant_by_tenant(ana: User) -> None:
    call_command("grant_role", "ana", "tenant", "--fleet", "prod", "--tenant", "acme")
    call_command("grant_role", "ana", "tenant", "--fleet", "prod", "--tenant", "globex")
    assert role_of(fresh(ana)) == Role.TENANT
    assert sorted(TenantGrant.objects.values_list("tenant", flat=True)) == ["acme", "globex"]
    call_command("grant_role", "ana", "viewer")  # a wider role replaces the grants
    assert not TenantGrant.objects.exists() and role_of(fresh(ana)) == Role.VIEWER


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nobody", "viewer"), "no user 'nobody' \\(--create makes one\\)"),
        (("new", "viewer", "--tenant", "x", "--create"), "--fleet and --tenant are for the"),
        (("ana", "tenant"), "a tenant viewer needs --fleet and --tenant"),
        (("ana", "tenant", "--fleet", "nope", "--tenant", "x"), "no fleet 'nope'"),
        (("ana", "viewer", "--tenant", "acme"), "--fleet and --tenant are for the tenant role"),
        (("ana",), "give a role, or --revoke"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_and_change_nothing(
    ana: User, args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(CommandError, match=message) as raised:
        call_command("grant_role", *args)
    assert raised.value.returncode == 2
    assert role_of(fresh(ana)) == Role.NONE and not TenantGrant.objects.exists()
    assert not User.objects.filter(username="new").exists()  # a refused --create leaves no user


def test_create_makes_the_user_and_prints_its_password_once(
    ana: User, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("grant_role", "bo", "oncall", "--create")
    out = capsys.readouterr().out
    assert out.startswith("bo: on-call\npassword (shown once): ")
    password = out.splitlines()[1].split(": ", 1)[1]
    bo = User.objects.get(username="bo")
    assert bo.check_password(password) and role_of(bo) == Role.ONCALL
