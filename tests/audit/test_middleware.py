"""The middleware makes a request's user the actor, in a sync and in an async stack, and
only while the request is served."""

from __future__ import annotations

import inspect

from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from audit.actor import current_actor
from audit.middleware import AuditActorMiddleware


def a_request(username: str) -> HttpRequest:
    request = RequestFactory().get("/")
    request.user = User(username=username)  # unsaved: the middleware never reads the database
    return request


def test_a_sync_view_runs_as_the_requests_user() -> None:
    seen = []

    def view(request: HttpRequest) -> HttpResponse:
        seen.append(current_actor())
        return HttpResponse()

    AuditActorMiddleware(view)(a_request("carol"))
    assert seen == ["carol"] and current_actor() == "system"


async def test_an_async_view_runs_as_the_requests_user() -> None:
    seen = []

    async def view(request: HttpRequest) -> HttpResponse:
        seen.append(current_actor())
        return HttpResponse()

    response = AuditActorMiddleware(view)(a_request("dave"))
    assert inspect.isawaitable(response)  # a coroutine: the stack stays async
    await response
    assert seen == ["dave"] and current_actor() == "system"
