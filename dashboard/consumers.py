"""The websocket behind a fleet's overview: authenticated, per-fleet group, re-sync on connect.

The channel layer and the cache are Redis in production. When either fails, at the
handshake or later, the socket is closed with CLOSE_LIVE_UNAVAILABLE and a reason the
page shows in its banner while it polls; every Redis call here is bounded by
REDIS_TIMEOUT_SECONDS, so a Redis that accepts and never answers cannot hang a handshake.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from importlib import import_module
from typing import Any, cast

from asgiref.typing import ASGIReceiveCallable
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.http import Http404
from django.utils.crypto import constant_time_compare

from dashboard import live
from fleetscope.lib import shared_cache
from fleetscope.lib.redis_settings import REDIS_ERRORS
from inventory.access import Role, ViewScope, fleet_for_user, role_of, view_scope

# Close codes the page's script understands (4000-4999 are free for applications).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NO_SUCH_FLEET = 4404
CLOSE_LIVE_UNAVAILABLE = 4503

LAYER = "the live-update channel (Redis)"
CACHE = "the shared cache (Redis)"


class FleetOverviewConsumer(AsyncWebsocketConsumer):
    view: ViewScope
    group: str
    # Why the channel layer failed, once it has; then nothing more is read from it.
    layer_failure: str | None = None
    opened = False
    closed = False
    _layer_receive: ASGIReceiveCallable

    # AsyncConsumer.__call__ stores the layer's receive here and waits on it beside the
    # socket; an error it raised would escape the consumer (a 500 at the handshake, 1011
    # later). Stored wrapped, a failure arrives as one message, handled in order below.
    @property
    def channel_receive(self) -> ASGIReceiveCallable:
        return cast(ASGIReceiveCallable, self._guarded_receive)

    @channel_receive.setter
    def channel_receive(self, receive: ASGIReceiveCallable) -> None:
        self._layer_receive = receive

    async def _guarded_receive(self) -> dict[str, Any]:
        if self.layer_failure is not None:
            await asyncio.Event().wait()  # the layer has failed: nothing more from it
        try:
            return cast(dict[str, Any], await self._layer_receive())
        except REDIS_ERRORS as exc:
            self.layer_failure = shared_cache.describe(exc, LAYER)
            return {"type": "fleetscope.layer.failed"}

    async def fleetscope_layer_failed(self, event: dict[str, Any]) -> None:
        # Before the handshake was answered, connect() sees `layer_failure` itself.
        if self.opened and self.layer_failure is not None:
            await self.refuse(self.layer_failure)

    async def refuse(self, why: str) -> None:
        """Close for good, saying why in the close frame (at most 123 bytes)."""
        if self.closed:
            return
        self.closed = True
        await self.close(
            code=CLOSE_LIVE_UNAVAILABLE, reason=f"live updates unavailable: {why}"[:120]
        )

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if await database_sync_to_async(role_of)(user) < Role.VIEWER:
            # The overview is a viewer's page: a tenant viewer sees only their cost.
            await self.close(code=CLOSE_FORBIDDEN)
            return
        view = await _view_for(user, self.scope["url_route"]["kwargs"]["code"])
        if view is None:
            await self.close(code=CLOSE_NO_SUCH_FLEET)
            return
        self.view = view
        # In the group before the handshake is answered, so no push after it is missed.
        failure = self.layer_failure or await self._join(live.group_name(view))
        # A refusal is sent from an open socket: a browser gets a close's code and reason
        # only then (a refused handshake is a bare 1006).
        await self.accept()
        self.opened = True
        if failure is not None:
            await self.refuse(failure)
            return
        if not await database_sync_to_async(live.watch)(view):
            # Unwatched, the fleet would get no pushes: say so rather than sit silent.
            await self.refuse(shared_cache.trouble() or f"{CACHE} did not keep the watch")
            return
        # Group messages may have been dropped while this client was away: re-sync now.
        latest = await database_sync_to_async(live.latest_overview_gzip)(view)
        if latest is not None:
            await self.send(bytes_data=latest)

    async def _join(self, group: str) -> str | None:
        """Join `group` within REDIS_TIMEOUT_SECONDS; why not, when it failed."""
        try:
            await asyncio.wait_for(
                self.channel_layer.group_add(group, self.channel_name),
                timeout=settings.REDIS_TIMEOUT_SECONDS,
            )
        except REDIS_ERRORS as exc:
            return shared_cache.describe(exc, LAYER)
        self.group = group
        return None

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group") and self.layer_failure is None:
            # Best effort: a group entry left behind expires on its own (group_expiry).
            with suppress(*REDIS_ERRORS):
                await asyncio.wait_for(
                    self.channel_layer.group_discard(self.group, self.channel_name),
                    timeout=settings.REDIS_TIMEOUT_SECONDS,
                )

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # The page pings to say it is still watching; nothing a client sends is trusted further.
        if text_data == "ping" and not self.closed:
            await database_sync_to_async(live.watch)(self.view)

    async def overview_update(self, event: dict[str, Any]) -> None:
        if self.closed:
            return
        # Channels resolves the user once per socket; re-check the session on every push
        # so a user who logged out, changed password or was deactivated stops receiving.
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        if key is None or not await database_sync_to_async(session_still_valid)(key):
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        # As published: gzip-compressed once for every socket, inflated by the page.
        await self.send(bytes_data=event["payload_gzip"])


def session_still_valid(session_key: str) -> bool:
    """True while the session exists, names an active user, and matches their password hash."""
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user_id = store.get(SESSION_KEY)
    session_hash = store.get(HASH_SESSION_KEY)
    if user_id is None or session_hash is None:
        return False
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    return user is not None and constant_time_compare(session_hash, user.get_session_auth_hash())


@database_sync_to_async
def _view_for(user: Any, code: str) -> ViewScope | None:
    try:
        return view_scope(user, fleet_for_user(user, code=code))
    except Http404:
        return None
