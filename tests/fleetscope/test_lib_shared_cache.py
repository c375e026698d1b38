"""The shared cache answers its fallback when Redis is down or silent, says why, and leaves
a failing Redis alone for a while instead of paying its timeout on every call."""

from __future__ import annotations

import time

import pytest
from django.test import override_settings

from devtools.waiting import wait_until
from fleetscope.lib import shared_cache
from fleetscope.lib.redis_settings import redis_caches
from tests.redisfakes import MARGIN, TIMEOUTS, silent_redis


def redis_cache_at(url: str) -> override_settings:
    return override_settings(CACHES=redis_caches(url, TIMEOUTS))


def test_a_stopped_redis_answers_every_fallback_and_says_why(closed_port: int) -> None:
    with redis_cache_at(f"redis://127.0.0.1:{closed_port}/0"):
        assert shared_cache.get("k", "fallback") == "fallback"
        assert shared_cache.get_many(["a", "b"]) == {}
        assert shared_cache.put("k", 1, timeout=5) is False
        assert shared_cache.put_many({"a": 1}, timeout=5) is False
        assert shared_cache.add("k", 1, timeout=5) is False
        shared_cache.delete("k")  # raises nothing either
        assert shared_cache.trouble() == "the shared cache (Redis) is unreachable (ConnectionError)"
    # A changed CACHES setting is a new cache: it is tried again at once.
    assert shared_cache.trouble() is None
    assert shared_cache.put("k", 1, timeout=5) is True


def test_a_silent_redis_costs_one_read_timeout_then_is_left_alone() -> None:
    with silent_redis() as redis, redis_cache_at(redis.url):
        started = time.monotonic()
        for _ in range(10):
            assert shared_cache.get("k") is None
        assert time.monotonic() - started < TIMEOUTS.read_seconds + MARGIN
        assert len(redis.accepted) == 1  # the other nine calls did not even connect
        assert shared_cache.trouble() == "the shared cache (Redis) did not answer in time"


def test_a_failing_redis_is_tried_again_once_the_retry_window_has_passed(
    closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_cache, "RETRY_SECONDS", 0.3)
    with redis_cache_at(f"redis://127.0.0.1:{closed_port}/0"):
        shared_cache.get("k")
        assert shared_cache.trouble() is not None
        wait_until(lambda: shared_cache.trouble() is None or None, timeout=5, what="the window")
        shared_cache.get("k")  # tried again, and failed again
        assert shared_cache.trouble() is not None


def test_errors_that_are_not_redis_failures_are_not_swallowed() -> None:
    def bug() -> None:
        raise KeyError("a bug, not an outage")

    with pytest.raises(KeyError):
        shared_cache.guarded(bug, None)
    assert shared_cache.trouble() is None
