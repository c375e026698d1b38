"""The websocket origin check: the page's own origin (host and port), or one listed as trusted.

Channels' AllowedHostsOriginValidator compares the Origin's host with ALLOWED_HOSTS and
ignores its port, so any other service on the same host (http://127.0.0.1:9999 next to
the dashboard on :8000) could open a socket with the viewer's cookie. Like Django's CSRF
check for POSTs, an Origin passes here when it is the request's own `Host` (port
included, the scheme's default port when the header has none) on a host ALLOWED_HOSTS
admits, or when CSRF_TRUSTED_ORIGINS lists it (scheme, host and port; `*.` subdomains).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(text: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) origin, None for anything else ("null" too)."""
    try:
        parts: SplitResult = urlsplit(text.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def _trusted(origin: tuple[str, str, int]) -> bool:
    scheme, host, port = origin
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        # Django's form: "https://*.example.com" trusts example.com and its subdomains.
        wildcard = "://*." in entry
        listed = _origin(entry.replace("://*.", "://", 1))
        if listed is None:
            continue
        pattern = "." + listed[1] if wildcard else listed[1]
        if (scheme, port) == (listed[0], listed[2]) and is_same_domain(host, pattern):
            return True
    return False


def _same_as_host(origin: tuple[str, str, int], host_header: str) -> bool:
    scheme, host, port = origin
    domain, host_port = split_domain_port(host_header.lower())
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:  # what Django's own host check allows then
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    if not domain or not validate_host(domain, allowed):
        return False
    served_on = int(host_port) if host_port else DEFAULT_PORTS[scheme]
    # split_domain_port keeps an IPv6 literal's brackets; the Origin's hostname has none.
    return domain.strip("[]") == host and served_on == port


def origin_allowed(origin_header: bytes | None, host_header: bytes | None) -> bool:
    if origin_header is None:
        return False
    try:
        origin = _origin(origin_header.decode("ascii"))
        host = (host_header or b"").decode("ascii")
    except UnicodeDecodeError:
        return False
    if origin is None:
        return False
    return _trusted(origin) or _same_as_host(origin, host)


class SameOriginValidator:
    """ASGI middleware for websockets: deny the handshake unless `origin_allowed`."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator only guards websocket connections")
        headers = dict(scope.get("headers", []))
        if origin_allowed(headers.get(b"origin"), headers.get(b"host")):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)  # type: ignore[arg-type]  # channels-stubs name their scope type only privately (_ChannelScope)
