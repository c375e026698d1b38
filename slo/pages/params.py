"""The SLO pages' query string: `?backend=local|prometheus` and `?at=` (ISO 8601, with a
zone); a value that cannot be used raises ParameterError, whose message says which and
why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

Backend = Literal["local", "prometheus"]
BACKENDS: tuple[Backend, ...] = ("local", "prometheus")
DEFAULT_BACKEND: Backend = "local"

BACKEND_UNKNOWN = "backend must be one of {choices}, not {value!r}"
AT_NOT_ISO = "at {value!r} is not an ISO 8601 time (e.g. 2026-12-01T10:00:00Z)"
AT_NO_ZONE = "at {value!r} needs a time zone (use Z for UTC)"
AT_OUT_OF_RANGE = "at {value!r} is outside the times FleetScope can evaluate"


class ParameterError(ValueError):
    """A query-string parameter that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class PageParams:
    backend: Backend
    at: datetime | None  # None: now


def backend_parse(value: str | None) -> Backend:
    if not value:
        return DEFAULT_BACKEND
    for backend in BACKENDS:
        if value == backend:
            return backend
    raise ParameterError(BACKEND_UNKNOWN.format(choices=", ".join(BACKENDS), value=value[:30]))


def at_parse(value: str | None) -> datetime | None:
    """`?at=`: an aware ISO 8601 time, in UTC; None when absent."""
    if not value:
        return None
    shown = value[:40]
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ParameterError(AT_NOT_ISO.format(value=shown)) from None
    if parsed.tzinfo is None:
        raise ParameterError(AT_NO_ZONE.format(value=shown))
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ParameterError(AT_OUT_OF_RANGE.format(value=shown)) from None


def params_parse(query: Mapping[str, str]) -> PageParams:
    return PageParams(backend_parse(query.get("backend")), at_parse(query.get("at")))
