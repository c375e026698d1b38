"""The shared cache as an optimisation that may fail, never as a reason for a page to.

With REDIS_URL the cache is Redis, and a Redis outage is just when FleetScope gets read.
Each call here answers its fallback on a cache error instead of raising. After one
failure the cache is left alone for RETRY_SECONDS: a Redis that accepts connections and
never answers then costs one read timeout per process every RETRY_SECONDS, not one per
call (an overview reads and writes the cache a dozen times). `trouble()` says what went
wrong while that lasts, in words fit for a viewer (no host, port or password).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.core.cache import cache
from django.core.signals import setting_changed
from django.dispatch import receiver
from redis.exceptions import TimeoutError as RedisTimeoutError

from fleetscope.lib.redis_settings import REDIS_ERRORS

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_SECONDS = 15.0


class _Breaker:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failed_at: float | None = None
        self.what = ""

    def open(self) -> bool:
        failed_at = self.failed_at
        return failed_at is not None and time.monotonic() - failed_at < RETRY_SECONDS

    def trip(self, exc: Exception) -> None:
        with self.lock:
            first = not self.open()
            self.failed_at = time.monotonic()
            self.what = describe(exc)
        if first:
            # Once per outage window: the log says what, the pages say that live is off.
            log.warning("shared cache unavailable, falling back: %s: %s", type(exc).__name__, exc)

    def reset(self) -> None:
        with self.lock:
            self.failed_at = None
            self.what = ""


_breaker = _Breaker()


def describe(exc: BaseException, what: str = "the shared cache (Redis)") -> str:
    """A Redis failure in a viewer's words: what happened, never where (no host or port)."""
    if isinstance(exc, RedisTimeoutError | TimeoutError):
        return f"{what} did not answer in time"
    return f"{what} is unreachable ({type(exc).__name__})"


def trouble() -> str | None:
    """Why the cache is being left alone now, or None while it works."""
    return _breaker.what if _breaker.open() else None


def guarded(call: Callable[[], T], fallback: T) -> T:
    if _breaker.open():
        return fallback
    try:
        return call()
    except REDIS_ERRORS as exc:
        _breaker.trip(exc)
        return fallback


def reset() -> None:
    """Try the cache again on the next call (tests; a changed CACHES setting)."""
    _breaker.reset()


@receiver(setting_changed)
def _cache_setting_changed(*, setting: str, **kwargs: object) -> None:
    if setting == "CACHES":
        reset()


def get(key: str, default: Any = None) -> Any:
    return guarded(lambda: cache.get(key, default), default)


def get_many(keys: list[str]) -> dict[str, Any]:
    return guarded(lambda: cache.get_many(keys), {})


def put(key: str, value: Any, *, timeout: float) -> bool:
    """Store `value`; False when it could not be."""

    def store() -> bool:
        cache.set(key, value, timeout=timeout)
        return True

    return guarded(store, False)


def put_many(values: Mapping[str, Any], *, timeout: float) -> bool:
    return guarded(lambda: not cache.set_many(dict(values), timeout=timeout), False)


def add(key: str, value: Any, *, timeout: float) -> bool:
    """Store `value` unless `key` is there; True when this call stored it."""
    return guarded(lambda: bool(cache.add(key, value, timeout=timeout)), False)


def delete(key: str) -> None:
    guarded(lambda: cache.delete(key), False)
