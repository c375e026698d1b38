"""Last good time per panel and "source unavailable since", across computations."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dashboard.freshness import freshness_annotate, source_down
from inventory.models import Fleet

pytestmark = pytest.mark.django_db
T = datetime(2026, 3, 1, 10, 40, tzinfo=UTC)
REFUSED = "prometheus unreachable: ConnectError"


def panel(id: str, status: str, reasons: Sequence[str] = (), notes: Sequence[str] = ()) -> dict:
    return {"id": id, "status": status, "reasons": list(reasons), "notes": list(notes)}


def annotate(fleet: Fleet, minutes: int, *panels: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = {"panels": list(panels)}
    freshness_annotate(
        payload, fleet=fleet, backend="prometheus", now=T + timedelta(minutes=minutes)
    )
    return payload


def down(id: str) -> dict:
    return panel(id, "error", ["prometheus-unavailable"], [REFUSED])


def test_an_outage_keeps_its_start_time_and_each_panel_its_last_good_time() -> None:
    fleet = Fleet.objects.create(slug="f", name="f")
    first = annotate(fleet, 0, panel("ttft", "ok"), panel("kv", "ok"))
    assert first["source_state"] == {"status": "ok", "since": None, "message": ""}
    assert first["panels"][0]["last_good_at"] == "2026-03-01T10:40:00Z"
    annotate(fleet, 1, panel("ttft", "ok"), panel("kv", "unavailable", ["no-data"]))
    outage = annotate(fleet, 2, down("ttft"), down("kv"))
    assert outage["source_state"] == {
        "status": "down",
        "since": "2026-03-01T10:42:00Z",
        "message": REFUSED,
    }
    assert [p["last_good_at"] for p in outage["panels"]] == [
        "2026-03-01T10:41:00Z",
        "2026-03-01T10:40:00Z",
    ]
    still = annotate(fleet, 9, down("ttft"), down("kv"))
    assert still["source_state"]["since"] == "2026-03-01T10:42:00Z"
    back = annotate(fleet, 10, panel("ttft", "ok"), down("kv"))
    assert back["source_state"]["status"] == "ok"
    again = annotate(fleet, 11, down("ttft"), down("kv"))
    assert again["source_state"]["since"] == "2026-03-01T10:51:00Z"


def test_fleets_and_sources_do_not_share_last_good_times() -> None:
    one = Fleet.objects.create(slug="one", name="one")
    two = Fleet.objects.create(slug="two", name="two")
    annotate(one, 0, panel("ttft", "ok"))
    assert annotate(two, 1, down("ttft"))["panels"][0]["last_good_at"] is None
    local: dict[str, Any] = {"panels": [panel("ttft", "unavailable", ["no-data"])]}
    freshness_annotate(local, fleet=one, backend="local", now=T)
    assert local["panels"][0]["last_good_at"] is None


@pytest.mark.parametrize(
    ("panels", "expected"),
    [
        ([down("a"), panel("b", "unavailable", ["not-exposed"])], REFUSED),
        ([down("a"), panel("b", "partial", [], ["store eu-1 unreachable"])], None),
        ([panel("a", "error", ["bad-query"], ["rejected the query"])], None),
        ([panel("a", "error", ["timeout"], ["timed out after 5s"])], "timed out after 5s"),
        ([panel("a", "unavailable", ["not-exposed"])], None),
    ],
)
def test_the_source_is_down_only_when_no_panel_got_data_and_the_source_failed(
    panels: list[dict], expected: str | None
) -> None:
    assert source_down(panels) == expected


def test_a_filtered_view_keeps_its_own_last_good_time_but_shares_the_outage() -> None:
    fleet = Fleet.objects.create(slug="f", name="f")
    annotate(fleet, 0, panel("ttft", "ok"))
    one: dict[str, Any] = {"panels": [down("ttft")]}
    freshness_annotate(one, fleet=fleet, backend="prometheus", now=T, view="|10.0.0.4:8000")
    assert one["panels"][0]["last_good_at"] is None
    assert one["source_state"]["since"] == "2026-03-01T10:40:00Z"
    assert annotate(fleet, 1, down("ttft"))["source_state"]["since"] == "2026-03-01T10:40:00Z"
