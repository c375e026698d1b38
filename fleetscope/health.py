"""Liveness and readiness: /healthz says the process answers, /readyz checks its dependencies."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection
from django.db.utils import DatabaseError
from django.utils import timezone

from inventory.heartbeat import heartbeat_age_seconds
from inventory.prometheus import PrometheusError, prometheus_ping

CHECK_TIMEOUT_SECONDS = 2.0
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    required: bool
    latency_seconds: float
    error: str = ""
    # Where the component lives (host, port, user in a driver's message): staff only.
    detail: str = ""

    def as_json(self, *, staff: bool = False) -> dict[str, object]:
        body: dict[str, object] = {
            "status": "ok" if self.ok else "down",
            "required": self.required,
            "latency_seconds": round(self.latency_seconds, 6),
        }
        if self.error:
            body["error"] = self.error
        if staff and self.detail:
            body["detail"] = self.detail
        return body


def _timed(name: str, required: bool, probe: Callable[[], None]) -> CheckResult:
    started = time.perf_counter()
    try:
        probe()
    except CheckFailed as exc:
        elapsed = time.perf_counter() - started
        return CheckResult(name, False, required, elapsed, str(exc), exc.detail)
    return CheckResult(name, True, required, time.perf_counter() - started)


class CheckFailed(Exception):
    """A dependency did not answer; the message is safe to show to anyone (no secrets, no
    bodies, no host or port); `detail`, if any, only to staff."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


def _database() -> None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        # Driver messages name the host, port and user: the first line goes to the log and
        # to staff, everyone else sees the error's class.
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        logger.warning("readiness: database unreachable: %s", first_line or type(exc).__name__)
        raise CheckFailed(f"database unreachable: {type(exc).__name__}", first_line) from None


def _broker() -> None:
    url = settings.REDIS_URL
    assert url is not None  # readiness_checks runs this check only when REDIS_URL is set
    client = redis.Redis.from_url(
        url,
        socket_timeout=CHECK_TIMEOUT_SECONDS,
        socket_connect_timeout=CHECK_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    except redis.RedisError as exc:
        raise CheckFailed(f"redis unreachable: {type(exc).__name__}") from None
    finally:
        client.close()


def _prometheus() -> None:
    url = settings.PROMETHEUS_URL
    assert url is not None  # readiness_checks runs this check only when PROMETHEUS_URL is set
    try:
        prometheus_ping(url, timeout_seconds=CHECK_TIMEOUT_SECONDS)
    except PrometheusError as exc:
        raise CheckFailed(str(exc)) from None


def _scheduler() -> None:
    age = heartbeat_age_seconds(now=timezone.now())
    if age is None:
        raise CheckFailed("scheduler has not run a periodic job yet")
    # Three missed intervals, not one: a single slow scrape is not an outage.
    limit = 3 * settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS
    if age > limit:
        raise CheckFailed(f"scheduler last ran {age:.0f}s ago (more than {limit}s)")


def readiness_checks() -> list[CheckResult]:
    """Database and broker are required; Prometheus is reported but not required,
    because the embedded sample store keeps the dashboard useful while it is down."""
    results = [_timed("database", True, _database)]
    if results[0].ok:
        # Not required: pages still serve while the scheduler (or beat) is late.
        results.append(_timed("scheduler", False, _scheduler))
    if settings.REDIS_URL:
        results.append(_timed("redis", True, _broker))
    if settings.PROMETHEUS_URL:
        results.append(_timed("prometheus", False, _prometheus))
    return results
