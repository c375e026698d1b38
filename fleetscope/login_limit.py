"""Login rate limiting (README, "Security"): after FLEETSCOPE_LOGIN_ATTEMPTS failed logins
for one username, or from one client address, within FLEETSCOPE_LOGIN_WINDOW_MINUTES,
further attempts are refused before any password is checked, until that window ends.

A window opens at the first failure and lasts its full length however many attempts come
after: refused attempts neither count nor extend it. A successful login clears its
username's count but not its address's, or an attacker with one account of their own
could reset their address between guesses at others.

Counts live in Django's cache: Redis when REDIS_URL is set, shared by every web process;
in memory in the embedded mode's single process. A cache that fails lets logins through
(and logs it): FleetScope is read during incidents, when a Redis outage may be one.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
import unicodedata
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

PREFIX = "fleetscope:login-failures"
# What a failing cache raises: Redis's errors, and OSError for a socket that breaks.
CACHE_ERRORS = (RedisError, OSError)


@dataclass(frozen=True)
class Refusal:
    """An attempt refused: by which count, and for how many more seconds."""

    reason: str  # "username" or "address"
    retry_after: int

    @property
    def message(self) -> str:
        minutes = max(1, math.ceil(self.retry_after / 60))
        unit = "minute" if minutes == 1 else "minutes"
        return (
            "Too many failed logins for this username or from this address. "
            f"Try again in {minutes} {unit}."
        )


def username_key(username: str) -> str:
    """The username as AuthenticationForm reads it (stripped, NFKC), case-folded so that
    case variants of one name share a count; hashed, since any text can be typed there."""
    name = unicodedata.normalize("NFKC", username.strip()).casefold()
    return f"{PREFIX}:user:{hashlib.sha256(name.encode()).hexdigest()}"


def address_key(address: str) -> str:
    """One count per IPv4 address, per /64 for IPv6: one host usually holds a whole /64."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        bucket = address or "unknown"
    else:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is None:
            bucket = str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
        else:
            bucket = str(ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else ip)
    return f"{PREFIX}:addr:{hashlib.sha256(bucket.encode()).hexdigest()}"


def _window_seconds() -> int:
    return int(settings.FLEETSCOPE_LOGIN_WINDOW_MINUTES) * 60


def refusal(username: str, address: str) -> Refusal | None:
    """Why an attempt for `username` from `address` is refused now, or None to let it in."""
    keys = {"username": username_key(username), "address": address_key(address)}
    try:
        stored = cache.get_many([f"{k}:{part}" for k in keys.values() for part in ("until", "n")])
    except CACHE_ERRORS:
        logger.exception("login limit: the cache failed; this login attempt is not limited")
        return None
    now = time.time()
    limit = int(settings.FLEETSCOPE_LOGIN_ATTEMPTS)
    for reason, key in keys.items():
        until, count = stored.get(f"{key}:until"), stored.get(f"{key}:n")
        if until is not None and count is not None and until > now and count >= limit:
            return Refusal(reason, max(1, math.ceil(until - now)))
    return None


def _count_failure(key: str, now: float) -> tuple[int, float]:
    """Add one failure to the window of `key`, opening one if none is open; returns the
    count and when the window ends."""
    window = _window_seconds()
    until = cache.get(f"{key}:until")
    if until is None or until <= now:
        # Two processes opening a window at the same instant may lose one count: harmless.
        until = now + window
        cache.set_many({f"{key}:until": until, f"{key}:n": 1}, timeout=window)
        return 1, until
    try:
        return int(cache.incr(f"{key}:n")), until
    except ValueError:  # the count expired between the two reads
        cache.set(f"{key}:n", 1, timeout=max(1, math.ceil(until - now)))
        return 1, until


def record_failure(username: str, address: str) -> None:
    now = time.time()
    limit = int(settings.FLEETSCOPE_LOGIN_ATTEMPTS)
    try:
        counted = {
            "username": _count_failure(username_key(username), now),
            "address": _count_failure(address_key(address), now),
        }
    except CACHE_ERRORS:
        logger.exception("login limit: the cache failed; this failed login is not counted")
        return
    for reason, (count, until) in counted.items():
        if count == limit:
            logger.warning(
                "login limit: failure %d for username %r from %s; this %s is refused for %d s",
                count,
                username[:150],
                address,
                reason,
                math.ceil(until - now),
            )


def clear(username: str) -> None:
    """A successful login: the username's failures are forgiven."""
    key = username_key(username)
    try:
        cache.delete_many([f"{key}:until", f"{key}:n"])
    except CACHE_ERRORS:
        logger.exception("login limit: the cache failed; the username's count is not cleared")
