"""The websocket behind a fleet's overview: authenticated, per-fleet group, re-sync on connect."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.http import Http404
from django.utils.crypto import constant_time_compare

from dashboard import live
from inventory.access import ViewScope, fleet_for_user, view_scope

# Close codes the page's script understands (4000-4999 are free for applications).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NO_SUCH_FLEET = 4404


class FleetOverviewConsumer(AsyncWebsocketConsumer):
    view: ViewScope
    group: str

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        view = await _view_for(user, self.scope["url_route"]["kwargs"]["code"])
        if view is None:
            await self.close(code=CLOSE_NO_SUCH_FLEET)
            return
        self.view, self.group = view, live.group_name(view)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await database_sync_to_async(live.watch)(view)
        # Group messages may have been dropped while this client was away: re-sync now.
        latest = await database_sync_to_async(live.latest_overview)(view)
        if latest is not None:
            await self.send(text_data=latest)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # The page pings to say it is still watching; nothing a client sends is trusted further.
        if text_data == "ping":
            await database_sync_to_async(live.watch)(self.view)

    async def overview_update(self, event: dict[str, Any]) -> None:
        # Channels resolves the user once per socket; re-check the session on every push
        # so a user who logged out, changed password or was deactivated stops receiving.
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        if key is None or not await database_sync_to_async(session_still_valid)(key):
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self.send(text_data=event["payload_json"])


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
