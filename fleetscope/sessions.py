"""Idle session expiry (README, "Security"): a session ends SESSION_COOKIE_AGE after the
last page or action of its user, not after the login.

Django extends a session only when it saves it: when it changes, or on every request with
SESSION_SAVE_EVERY_REQUEST. That setting would also write the session of a signed-in
browser calling /readyz, whose point is to answer while the database is down, and write
once per request. This middleware changes the session instead, at most once a minute, and
only on views that need a login: the open ones (health, the live overview's JSON polled in
the background) are not activity, so a page left open still signs out when idle. A user
that is not the session's (an API token's, fleetscope.middleware) has no session to extend.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

from fleetscope.middleware import open_to_everyone

# When the session was last extended, in whole seconds since the epoch.
SEEN = "_fleetscope_seen"


def touch_interval() -> int:
    """Seconds between two extensions: a minute, less for (test) ages under ten minutes."""
    return max(1, min(60, int(settings.SESSION_COOKIE_AGE) // 10))


class IdleSessionMiddleware(MiddlewareMixin):
    """After AuthenticationMiddleware: marks the session changed, so SessionMiddleware saves
    it with a new expiry (stored and in the cookie's Max-Age)."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if open_to_everyone(view_func) or not request.user.is_authenticated:
            return None
        if SESSION_KEY not in request.session:  # signed in by a token: writing would make one
            return None
        now = int(time.time())
        seen = request.session.get(SEEN)
        if not isinstance(seen, int) or now - seen >= touch_interval():
            request.session[SEEN] = now
        return None
