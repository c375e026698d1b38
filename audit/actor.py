"""Who is acting: the signed-in user of the request being served, the management command
being run, or "system" (the scheduler, Celery tasks, anything else without either).

A context variable, so each request (thread or asyncio task) and each command sees its own;
audit.middleware sets it per request, and every management command sets its own name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.core.management.base import BaseCommand
from django.http import HttpRequest

SYSTEM = "system"
COMMAND_PREFIX = "command:"

# A request, not its user: the user is read only when a change is recorded, so a page that
# changes nothing never loads the session (/readyz must not touch the database for it).
_acting: ContextVar[str | HttpRequest] = ContextVar("audit_actor", default=SYSTEM)


def current_actor() -> str:
    """The username of the signed-in user, "command:<name>", or "system"."""
    acting = _acting.get()
    if isinstance(acting, str):
        return acting
    user = getattr(acting, "user", None)
    if user is None or not user.is_authenticated:
        return SYSTEM
    return str(user.get_username())


@contextmanager
def acting_as(actor: str | HttpRequest) -> Iterator[None]:
    """Changes made inside are recorded as `actor`'s (a request stands for its user)."""
    token = _acting.set(actor)
    try:
        yield
    finally:
        _acting.reset(token)


_WRAPPERS: set[Callable[..., Any]] = set()  # installed once per process, whoever asks again


def command_name(command: BaseCommand) -> str:
    # Django loads `<app>/management/commands/<name>.py`'s Command: the module is the name.
    return type(command).__module__.rpartition(".")[2]


def commands_act_as_themselves() -> None:
    """Every management command (manage.py or call_command) acts as "command:<name>".

    BaseCommand.execute is the one method both ways in run; wrapping it once here spares
    every command of every app from having to remember."""
    original: Callable[..., Any] = BaseCommand.execute
    if original in _WRAPPERS:
        return

    @functools.wraps(original)
    def execute(self: BaseCommand, *args: Any, **options: Any) -> Any:
        with acting_as(COMMAND_PREFIX + command_name(self)):
            return original(self, *args, **options)

    _WRAPPERS.add(execute)
    setattr(BaseCommand, "execute", execute)  # noqa: B010  (mypy refuses a method assigned)
