"""UTC times as the pages and exports write them: `2026-12-01 10:05 UTC` for people,
`2026-12-01T10:05:00Z` for machines; and the millisecond Prometheus reads a time at."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def utc_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_text_of_iso(text: str | None) -> str:
    """`2026-11-12T14:05:00Z` -> `2026-11-12 14:05 UTC`; "" for none."""
    return utc_text(datetime.fromisoformat(text.replace("Z", "+00:00"))) if text else ""


def unix_millis(seconds: float) -> int:
    """Seconds (a unix time or a step) in whole milliseconds, the precision Prometheus
    works at. A query's start and step and the grid its answer is read on all round here:
    rounded apart (`"%.3f" % t` against `round(t * 1000)`), a half-millisecond start put
    every answered point 1 ms off the grid."""
    return round(seconds * 1000)
