"""Time ranges from URL parameters: explicit, UTC, and never too many points."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

RANGES: dict[str, timedelta] = {
    "15m": timedelta(minutes=15),
    "1h": timedelta(hours=1),
    "3h": timedelta(hours=3),
    "6h": timedelta(hours=6),
    "12h": timedelta(hours=12),
    "24h": timedelta(hours=24),
    "3d": timedelta(days=3),
}
DEFAULT_RANGE = "1h"
# About this many points per series on a chart: enough for detail, cheap to draw.
TARGET_POINTS = 240
MIN_STEP_SECONDS = 15.0
# No metrics source holds samples before the Unix epoch; a range must start after it.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class RangeError(ValueError):
    """A time range parameter that cannot be used; the message says which and why, and
    `parameter` names it (`since` or `end`) for pages that point at the field."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class TimeRange:
    since: str
    start: datetime
    end: datetime
    step_seconds: float


def parse_range(since: str | None, end: str | None, *, now: datetime) -> TimeRange:
    label = since or DEFAULT_RANGE
    length = RANGES.get(label)
    if length is None:
        raise RangeError("since", f"since must be one of {', '.join(RANGES)}, not {label[:20]!r}")
    if end:
        try:
            stop = datetime.fromisoformat(end.replace("Z", "+00:00"))
        except ValueError:
            raise RangeError("end", f"end {end[:40]!r} is not an ISO 8601 time") from None
        if stop.tzinfo is None:
            raise RangeError("end", "end needs a time zone (use Z for UTC)")
        try:
            stop = stop.astimezone(UTC)
        except OverflowError:
            # Only a year-1 or year-9999 time shifted past the calendar's edge gets here.
            edge = "before" if stop.year == 1 else "after"
            message = f"end {end[:40]!r} is {edge} the times a range can hold"
            raise RangeError("end", message) from None
        if stop > now:
            # Not quietly "now": a window that ends somewhere else than asked is a wrong answer.
            message = (
                f"end {end[:40]!r} is in the future (now is {_stamp(now)});"
                " leave end empty for a window ending now"
            )
            raise RangeError("end", message)
        if stop - EPOCH < length:
            message = f"end {end[:40]!r} is before {EPOCH:%Y-%m-%d} plus the range ({label})"
            raise RangeError("end", message)
    else:
        stop = now
    step = max(MIN_STEP_SECONDS, length.total_seconds() / TARGET_POINTS)
    return TimeRange(label, stop - length, stop, step)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
