"""The rules a configured Prometheus evaluates, read through FleetScope's one Prometheus
client (`inventory.prometheus`: `GET /api/v1/rules`, a read-only path, with its timeout
and its guard against anything but GET). Prometheus down, slow, or answering HTML is one
error of the audit, never a traceback; the rest of the audit still runs."""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from django.conf import settings

from blindspots.sources import rules_from_api
from blindspots.types import Item, ItemError
from inventory.prometheus import (
    METRIC_NAMES_PATH,
    PrometheusError,
    prometheus_metric_names,
    prometheus_query,
    prometheus_rules,
)
from queries.promql import any_of_regex, string_literal

SOURCE_NAME = "Prometheus rules API"
NAMES_SOURCE = "Prometheus metric names"
HELD_SOURCE = "Prometheus metric names held"
# How far back a name Prometheus no longer has a recent sample of counts as one it held:
# a rule whose series stopped within this long has gone blind, not been wrong from the start.
HELD_DAYS = 7
# Names per query: the regex stays short enough for any Prometheus' URL limits.
NAMES_PER_QUERY = 100
NOT_CONFIGURED = "Prometheus is not configured (PROMETHEUS_URL is empty)"


def prometheus_configured() -> bool:
    return bool(settings.PROMETHEUS_URL)


def rules_from_prometheus(
    base_url: str | None = None, *, timeout_seconds: float | None = None
) -> tuple[list[Item], list[ItemError]]:
    """The alerting and recording rules of `base_url` (default: PROMETHEUS_URL) as items,
    and what could not be read as errors."""
    url = base_url or settings.PROMETHEUS_URL
    if not url:
        return [], [ItemError("file", SOURCE_NAME, "PROMETHEUS_URL", NOT_CONFIGURED)]
    timeout = timeout_seconds or float(settings.PROMETHEUS_TIMEOUT_SECONDS)
    where = f"{url.rstrip('/')}/api/v1/rules"
    try:
        payload = prometheus_rules(url, timeout_seconds=timeout)
    except PrometheusError as exc:
        return [], [ItemError("file", SOURCE_NAME, where, str(exc))]
    return rules_from_api(payload)


def names_from_prometheus(
    names: Collection[str], base_url: str | None = None, *, timeout_seconds: float | None = None
) -> tuple[frozenset[str] | None, list[ItemError]]:
    """Which of `names` the configured Prometheus has a sample of within its lookback (the
    last five minutes) now: one instant `group by (__name__)` query per chunk of names, so
    the cost grows with what the audit reads, not with everything Prometheus holds. None,
    with the reason as an error, when it cannot say."""
    url = base_url or settings.PROMETHEUS_URL
    if not url:
        return None, [ItemError("file", NAMES_SOURCE, "PROMETHEUS_URL", NOT_CONFIGURED)]
    timeout = timeout_seconds or float(settings.PROMETHEUS_TIMEOUT_SECONDS)
    wanted = sorted(set(names))
    seen: set[str] = set()
    now = datetime.now(UTC)
    for start in range(0, len(wanted), NAMES_PER_QUERY):
        chunk = wanted[start : start + NAMES_PER_QUERY]
        query = f"group by (__name__) ({{__name__=~{string_literal(any_of_regex(chunk))}}})"
        try:
            answer = prometheus_query(url, query=query, at=now, timeout_seconds=timeout)
        except PrometheusError as exc:
            return None, [
                ItemError("file", NAMES_SOURCE, f"{url.rstrip('/')}/api/v1/query", str(exc))
            ]
        for row in answer.result:
            metric = row.get("metric") if isinstance(row, dict) else None
            name = metric.get("__name__") if isinstance(metric, dict) else None
            if isinstance(name, str):
                seen.add(name)
    return frozenset(seen), []


def names_held_by_prometheus(
    base_url: str | None = None,
    *,
    now: datetime | None = None,
    timeout_seconds: float | None = None,
) -> tuple[frozenset[str] | None, list[ItemError]]:
    """Every metric name the configured Prometheus holds a sample of in the last HELD_DAYS,
    stale ones included (prometheus-api-client's `all_metrics`). Beside the recent names,
    it tells a series that stopped (the rule went blind) from one that never existed (a
    typo). None, with the reason as an error, when it cannot say."""
    url = base_url or settings.PROMETHEUS_URL
    if not url:
        return None, [ItemError("file", HELD_SOURCE, "PROMETHEUS_URL", NOT_CONFIGURED)]
    timeout = timeout_seconds or float(settings.PROMETHEUS_TIMEOUT_SECONDS)
    end = now or datetime.now(UTC)
    try:
        names = prometheus_metric_names(
            url, start=end - timedelta(days=HELD_DAYS), end=end, timeout_seconds=timeout
        )
    except PrometheusError as exc:
        return None, [
            ItemError("file", HELD_SOURCE, f"{url.rstrip('/')}{METRIC_NAMES_PATH}", str(exc))
        ]
    return names, []
