from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.timerange import RangeError, parse_range

NOW = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def test_default_range_is_the_last_hour_at_fifteen_seconds() -> None:
    span = parse_range(None, None, now=NOW)
    assert (span.since, span.start, span.end, span.step_seconds) == (
        "1h",
        NOW - timedelta(hours=1),
        NOW,
        15.0,
    )


def test_long_ranges_widen_the_step_instead_of_failing() -> None:
    span = parse_range("3d", None, now=NOW)
    assert span.step_seconds == 3 * 86400 / 240
    assert (span.end - span.start) / timedelta(seconds=span.step_seconds) == 240


def test_end_is_parsed_as_utc() -> None:
    span = parse_range("1h", "2026-11-29T08:00:00Z", now=NOW)
    assert span.end == datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    assert parse_range("1h", "2026-11-29T10:00:00+01:00", now=NOW).end == NOW


@pytest.mark.parametrize("end", ["2030-01-01T00:00:00+00:00", "2026-11-29T09:00:01Z"])
def test_an_end_in_the_future_is_an_error_not_quietly_now(end: str) -> None:
    with pytest.raises(RangeError) as raised:
        parse_range("1h", end, now=NOW)
    assert raised.value.parameter == "end"
    assert str(raised.value) == (
        f"end {end!r} is in the future (now is 2026-11-29T09:00:00Z);"
        " leave end empty for a window ending now"
    )


@pytest.mark.parametrize(
    ("since", "end", "message"),
    [
        ("7y", None, "since must be one of"),
        ("1h", "yesterday", "is not an ISO 8601 time"),
        ("1h", "2026-11-29T08:00:00", "needs a time zone"),
        ("1h", "0001-01-01T00:00:00Z", "end '0001-01-01T00:00:00Z' is before"),
        ("3d", "1970-01-02T00:00:00Z", "is before"),
        ("1h", "0001-01-01T00:30:00+01:00", "is before"),
        ("1h", "9999-12-31T23:59:59-12:00", "is after"),
    ],
)
def test_bad_ranges_say_what_is_wrong(since: str, end: str | None, message: str) -> None:
    with pytest.raises(RangeError, match=message) as raised:
        parse_range(since, end, now=NOW)
    assert raised.value.parameter == ("since" if since == "7y" else "end")
