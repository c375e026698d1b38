"""The live job: at most one computation per view in flight, and pushes that say when they
were made and when the page must stop calling them live."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connections
from django.test import Client, override_settings
from django.utils import timezone

from dashboard import live
from dashboard.overview import OverviewRequest, overview_compute
from dashboard.panels import Group
from devtools.waiting import wait_until
from inventory.access import ViewScope
from inventory.models import Fleet
from queries import Window
from tests.dashboard.replicafill import END, replica
from tests.queries.storefill import T0, fleet_named
from tests.roles import user_with_role


@pytest.fixture
def watched(db: None) -> Fleet:
    fleet = fleet_named("live")
    assert live.watch(ViewScope(fleet))
    return fleet


@pytest.fixture
def computations(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[str], threading.Event]]:
    """Counts computations; each one waits for the event before it returns."""
    started: list[str] = []
    release = threading.Event()

    def compute(fleet: Fleet) -> dict[str, object]:
        started.append(fleet.slug)
        release.wait(30)
        return {"panels": []}

    monkeypatch.setattr(live, "overview_for_default_view", compute)
    try:
        yield started, release
    finally:
        release.set()


def publish_in_thread() -> int:
    try:
        return live.overviews_publish()
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_a_view_still_being_computed_is_skipped_rather_than_computed_twice(
    watched: Fleet, computations: tuple[list[str], threading.Event]
) -> None:
    started, release = computations
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(publish_in_thread)
        wait_until(lambda: started or None, timeout=10, what="the first computation")
        # An overrunning run (or another worker) is still at it: this run leaves it alone.
        assert live.overviews_publish() == 0
        assert started == ["live"]
        release.set()
        assert first.result(timeout=30) == 1
    # Once it is done the view is free again.
    assert live.overviews_publish() == 1
    assert started == ["live", "live"]


def test_a_computation_that_fails_frees_its_view_for_the_next_run(
    watched: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fleet: Fleet) -> dict[str, object]:
        raise RuntimeError("store unreadable")

    monkeypatch.setattr(live, "overview_for_default_view", broken)
    with pytest.raises(RuntimeError):
        live.overviews_publish()
    monkeypatch.setattr(live, "overview_for_default_view", lambda fleet: {"panels": []})
    assert live.overviews_publish() == 1


def test_each_push_says_when_it_was_made_and_when_the_page_must_call_it_stale(
    watched: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "overview_for_default_view", lambda fleet: {"panels": []})
    with override_settings(FLEETSCOPE_SCRAPE_INTERVAL_SECONDS=15):
        assert live.overviews_publish() == 1
    pushed = live.latest_overview(ViewScope(watched))
    assert pushed is not None
    stamp = json.loads(pushed)["live"]
    made = datetime.strptime(stamp["pushed_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - made) < timedelta(minutes=1)
    assert stamp["interval_seconds"] == 15
    # About two intervals: one late push is not yet stale, two missed ones are.
    assert stamp["stale_after_seconds"] == 30


def test_the_published_overview_is_compressed_once_and_served_as_pushed(
    watched: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        live, "overview_for_default_view", lambda fleet: {"panels": [], "note": "x" * 5000}
    )
    assert live.overviews_publish() == 1
    pushed = live.latest_overview_gzip(ViewScope(watched))
    assert pushed is not None
    assert gzip.decompress(pushed).decode() == live.latest_overview(ViewScope(watched))
    assert len(pushed) < 1000  # 5000 repeated characters and a stamp
    client = Client()
    client.force_login(user_with_role("live-viewer", "viewer"))
    url = f"/fleets/{watched.slug}/overview.json"
    # A browser (or httpx) accepts gzip: it gets the pushed bytes, with no recompression.
    answer = client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert answer.status_code == 200
    assert answer["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in answer["Vary"]
    assert answer.content == pushed
    # A client that does not accept gzip gets the same JSON inflated.
    plain = client.get(url)
    assert plain.status_code == 200
    assert not plain.has_header("Content-Encoding")
    assert json.loads(plain.content)["note"] == "x" * 5000


def test_a_group_tab_polls_its_own_panels_cut_from_the_published_overview(db: None) -> None:
    fleet = fleet_named("live-groups")
    replica(fleet, "a:1", start=(timezone.now() - T0).total_seconds() - (END + 20))
    assert live.watch(ViewScope(fleet))
    assert live.overviews_publish() == 1
    client = Client()
    client.force_login(user_with_role("group-viewer", "viewer"))
    whole = client.get(f"/fleets/{fleet.slug}/overview.json")
    assert whole.status_code == 200
    overview = json.loads(whole.content)
    drawn = {p["id"] for p in overview["panels"] if p["status"] in ("ok", "partial")}
    assert {"latency.ttft", "queue.depth"} <= drawn  # the cut below holds real charts
    for group in Group:
        answer = client.get(f"/fleets/{fleet.slug}/overview.json?group={group}")
        assert answer.status_code == 200
        payload = json.loads(answer.content)
        assert {p["group"] for p in payload["panels"]} == {group}
        assert "replicas" not in payload
        assert payload["live"] == overview["live"]  # the same publish
        # What a group page computes for itself, from the same store and window.
        computed = overview_compute(
            OverviewRequest(fleet, window_of(payload), "local", group=group)
        )
        assert [p["id"] for p in payload["panels"]] == [p["id"] for p in computed["panels"]]
        assert [p["status"] for p in payload["panels"]] == [p["status"] for p in computed["panels"]]
        # Measured: a tab polls its own panels, not every group's (31 panels).
        assert len(answer.content) < 0.6 * len(whole.content), (group, len(answer.content))


def window_of(payload: dict[str, Any]) -> Window:
    window = payload["window"]
    return Window(
        datetime.fromisoformat(window["start"]),
        datetime.fromisoformat(window["end"]),
        window["step_seconds"],
    )
