"""Changes made while a request is served are recorded as its signed-in user's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from audit.actor import acting_as


class AuditActorMiddleware:
    """Sets the acting request for the view and what runs inside it. Works in both modes,
    so an ASGI server does not hop threads for it; the user is read only if the request
    changes something (audit.actor)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._acall(request)
        with acting_as(request):
            response: HttpResponseBase = self.get_response(request)
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        with acting_as(request):
            response: HttpResponseBase = await self.get_response(request)
        return response
