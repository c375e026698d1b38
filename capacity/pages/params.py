"""The period and source of a capacity or cost page, from its query string or a
command's flags: UTC, explicit, and refused with one message naming the parameter."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from urllib.parse import urlencode

from fleetscope.lib.utc import utc_iso, utc_text

Backend = Literal["local", "prometheus"]
BACKENDS: tuple[Backend, ...] = ("local", "prometheus")
DEFAULT_BACKEND: Backend = "local"
DEFAULT_SPAN = timedelta(hours=24)
MAX_SPAN = timedelta(days=92)
# A clock a little ahead of ours is not "the future": `to` may be up to a minute past now.
FUTURE_TOLERANCE = timedelta(minutes=1)
MAX_TENANT_CHARS = 100  # the tenant rule's field

NOT_ISO = (
    "{name} {value!r} is not an ISO 8601 date or time (e.g. 2026-11-01 or 2026-11-01T10:00:00Z)"
)
OUT_OF_RANGE = "{name} {value!r} is outside the times FleetScope can report on"
BACKEND_UNKNOWN = "{name} must be one of {choices}, not {value!r}"
FROM_AFTER_TO = "{start_name} ({start}) must be before {end_name} ({end})"
TOO_LONG = "the period from {start} to {end} is {days:.1f} days; at most {max_days} days"
FUTURE_END = "{end_name} ({end}) is in the future; the latest end is now ({now})"


class ParameterError(ValueError):
    """A period or backend that cannot be used; the message names the parameter and why."""


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime
    backend: Backend
    defaulted: bool  # no `from` / `to` given: the last 24 hours until now
    tenant: str | None = None  # one tenant's view of the report (`?tenant=`)

    @property
    def text(self) -> str:
        return f"{utc_text(self.start)} to {utc_text(self.end)}"

    @property
    def query(self) -> str:
        found = f"from={iso(self.start)}&to={iso(self.end)}&backend={self.backend}"
        return found + (f"&{urlencode({'tenant': self.tenant})}" if self.tenant else "")


# The page's names for the shared UTC formats.
iso = utc_iso


def time_parse(value: str, name: str) -> datetime:
    """An ISO 8601 date (midnight UTC) or time (UTC when it has no zone), in UTC."""
    shown = value[:40]
    text = value.strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ParameterError(NOT_ISO.format(name=name, value=shown)) from None
    try:
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ParameterError(OUT_OF_RANGE.format(name=name, value=shown)) from None


def backend_parse(value: str | None, name: str = "backend") -> Backend:
    if not value:
        return DEFAULT_BACKEND
    for backend in BACKENDS:
        if value == backend:
            return backend
    choices = ", ".join(BACKENDS)
    raise ParameterError(BACKEND_UNKNOWN.format(name=name, choices=choices, value=value[:30]))


def period_check(
    start: datetime,
    end: datetime,
    *,
    now: datetime,
    start_name: str = "from",
    end_name: str = "to",
) -> None:
    if start >= end:
        raise ParameterError(
            FROM_AFTER_TO.format(
                start_name=start_name, start=utc_text(start), end_name=end_name, end=utc_text(end)
            )
        )
    if end > now + FUTURE_TOLERANCE:
        raise ParameterError(FUTURE_END.format(end_name=end_name, end=utc_text(end),
                                               now=utc_text(now)))  # fmt: skip
    if end - start > MAX_SPAN:
        days = (end - start).total_seconds() / 86400
        raise ParameterError(
            TOO_LONG.format(
                start=utc_text(start), end=utc_text(end), days=days, max_days=MAX_SPAN.days
            )  # fmt: skip
        )


def period_parse(query: Mapping[str, str], now: datetime | None = None) -> Period:
    """`?from=&to=&backend=`: the last 24 hours until now by default; `from` alone runs to
    now, `to` alone starts 24 hours before it. `to` is exclusive."""
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0)
    backend = backend_parse(query.get("backend"))
    start_text, end_text = query.get("from", ""), query.get("to", "")
    end = time_parse(end_text, "to") if end_text else now
    start = time_parse(start_text, "from") if start_text else end - DEFAULT_SPAN
    period_check(start, end, now=now)
    tenant = (query.get("tenant") or "").strip() or None
    if tenant is not None and len(tenant) > MAX_TENANT_CHARS:
        raise ParameterError(f"tenant is {len(tenant)} characters; at most {MAX_TENANT_CHARS}")
    return Period(start, end, backend, defaulted=not (start_text or end_text), tenant=tenant)
