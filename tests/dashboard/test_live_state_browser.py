"""The overview's live badge in headless Chromium: "live" only while pushes keep coming,
"stale since HH:MM:SS UTC" and polling when they stop, live again when they resume; and
with Redis down, a banner saying live updates are unavailable and why, while it polls.

The server is uvicorn in a thread of the test process with the Redis channel layer on the
test Redis (tests/dashboard/test_overview_browser.py does the same), so this thread can
push the way the scheduler does; the outage case points it at a port nothing listens on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import TypeVar

import pytest
from django.db import connections
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Page, expect

from dashboard import live
from fleetscope.lib import shared_cache
from fleetscope.lib.channel_layers import redis_channel_layers
from fleetscope.lib.redis_settings import RedisTimeouts, redis_caches
from inventory.access import ViewScope
from inventory.models import Fleet
from tests.browser import asgi_server, chromium, screenshot_path
from tests.conftest import TEST_REDIS_URL
from tests.dashboard.replicafill import END, replica
from tests.drills.services import RedisServer
from tests.queries.storefill import T0, fleet_named
from tests.roles import user_with_role

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

T = TypeVar("T")
PASSWORD = "viewer-password-1"
LIVE_STATE_JS = "static/js/live_state.js"


def off_the_loop(work: Callable[[], T]) -> T:
    """Playwright's sync API runs an event loop on this thread: the ORM works on another."""

    def run() -> T:
        try:
            return work()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()


@pytest.fixture
def fleet(db: None) -> Fleet:
    user_with_role("viewer", "viewer", password=PASSWORD)
    fleet = fleet_named("badge")
    replica(fleet, "10.0.0.1:8000", start=(timezone.now() - T0).total_seconds() - (END + 20))
    return fleet


# Every text the badge and every value `data-polling` takes from now on, however briefly.
SEEN_STATES_JS = """() => {
  const seen = window.seenStates = {badge: [], polling: []};
  const badge = document.getElementById("live-state");
  new MutationObserver(() => seen.badge.push(badge.textContent))
    .observe(badge, {childList: true, characterData: true, subtree: true});
  new MutationObserver(() => seen.polling.push(document.body.dataset.polling))
    .observe(document.body, {attributes: true, attributeFilter: ["data-polling"]});
}"""


def logged_in(page: Page, url: str, fleet: Fleet) -> None:
    page.goto(f"{url}/login/?next=/fleets/{fleet.slug}/")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-rendered=true]", timeout=30_000)


def test_the_state_logic_counts_from_the_last_new_push_on_the_browsers_own_clock() -> None:
    with chromium() as browser:
        page = browser.new_page()
        page.add_script_tag(path=LIVE_STATE_JS)
        states = page.evaluate(
            """() => {
              const s = new window.FleetScopeLiveState(30);
              const seen = [s.at(0)];
              s.opened(1000);
              seen.push(s.at(30000), s.at(31001));
              const live = {pushed_at: "2026-01-01T10:41:07Z", stale_after_seconds: 4};
              seen.push(s.pushed(live, 40000), s.pushed(live, 41000));
              seen.push(s.at(43999), s.at(44001));
              s.closed();
              seen.push(s.at(45000));
              return seen;
            }"""
        )
    assert states == [
        {"state": "closed"},
        {"state": "live"},  # opened, a push is due within the window
        {"state": "stale", "since": "1970-01-01T00:00:01.000Z"},
        True,
        False,  # the same push again (the re-sync on connect) is no news
        {"state": "live"},
        {"state": "stale", "since": "2026-01-01T10:41:07Z"},
        {"state": "closed"},
    ]


def test_the_badge_turns_stale_without_pushes_polls_and_is_live_again_on_the_next(
    fleet: Fleet,
) -> None:
    layers = redis_channel_layers(TEST_REDIS_URL, prefix=f"fleetscope-test-badge-{fleet.code.hex}")
    # One-second pushes: stale after two seconds without one.
    settings = override_settings(CHANNEL_LAYERS=layers, FLEETSCOPE_SCRAPE_INTERVAL_SECONDS=1)
    with settings, asgi_server() as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        logged_in(page, url, fleet)
        badge = page.locator("#live-state")
        expect(badge).to_have_text(re.compile(r"^stale since \d\d:\d\d:\d\d UTC, polling$"),
                                   timeout=30_000)  # fmt: skip
        expect(badge).to_have_class(re.compile("badge-warning"))
        expect(page.locator("body")).to_have_attribute("data-polling", "on")
        page.screenshot(path=screenshot_path("overview-stale-badge"))

        def published() -> int:
            live.watch(ViewScope(fleet))
            return live.overviews_publish()

        assert off_the_loop(published) == 1
        expect(badge).to_have_text("live", timeout=30_000)
        expect(page.locator("body")).to_have_attribute("data-polling", "off")


def test_with_redis_down_a_banner_says_live_updates_are_unavailable_and_the_page_polls(
    fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    redis = RedisServer(tmp_path)  # its port stays closed until Redis "comes back"
    # The process leaves a failed Redis alone for 15 s; 2 s keeps the test short.
    monkeypatch.setattr(shared_cache, "RETRY_SECONDS", 2.0)
    timeouts = RedisTimeouts(1.0, 1.0)
    settings = override_settings(
        CHANNEL_LAYERS=redis_channel_layers(redis.url(), timeouts=timeouts),
        CACHES=redis_caches(redis.url(), timeouts),
    )
    with settings, asgi_server() as url, chromium() as browser, ExitStack() as stack:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        closed: list[object] = []
        page.on("websocket", lambda socket: socket.on("close", lambda s: closed.append(s)))
        logged_in(page, url, fleet)
        banner = page.locator("#live-banner")
        expect(banner).to_be_visible(timeout=30_000)
        expect(banner).to_have_text(
            re.compile(r"^live updates unavailable: .*Redis.*; polling every 15 s$")
        )
        expect(page.locator("#live-state")).to_have_text("polling")
        expect(page.locator("body")).to_have_attribute("data-polling", "on")
        # The data is there all the same.
        expect(page.locator("#replica-table tbody tr")).to_have_count(2)
        page.screenshot(path=screenshot_path("overview-redis-down"), full_page=True)
        # Five refused sockets (accepted, then closed with 4503) grow the backoff to 32 s,
        # past two poll intervals; then Redis comes back. The next poll answering without
        # trouble reconnects at once: live again within a poll interval (and the 2 s the
        # server leaves Redis alone), where the backoff alone would wait for its 32 s.
        page.evaluate(SEEN_STATES_JS)
        for _ in range(240):  # Playwright delivers its events while it waits, not in sleep()
            if len(closed) >= 5:
                break
            page.wait_for_timeout(250)
        assert len(closed) >= 5, f"{len(closed)} refused sockets in a minute"
        # A refused socket never showed as live, even for a moment, nor stopped the polls.
        seen = page.evaluate("window.seenStates")
        assert "live" not in seen["badge"] and "off" not in seen["polling"], seen
        redis.start()
        stack.callback(redis.stop)
        expect(page.locator("#live-state")).to_have_text("live", timeout=26_000)
        expect(banner).to_be_hidden()
        expect(page.locator("body")).to_have_attribute("data-polling", "off")
        page.screenshot(path=screenshot_path("overview-redis-back"))
