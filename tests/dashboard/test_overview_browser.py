"""The overview in headless Chromium against the real ASGI app: the replica table and its
click-through, group pages, and hostile label values arriving over the websocket.

The server is uvicorn running `fleetscope.asgi.application` in a thread of the
test process (so it sees the test database), with the Redis channel layer,
which lets this thread push to the server's websocket consumers the way the
scheduler does in production.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.db import connections
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Page, expect

from dashboard import live
from fleetscope.lib.channel_layers import redis_channel_layers
from inventory.access import ViewScope
from inventory.models import Fleet
from tests.browser import asgi_server, chromium, screenshot_path
from tests.conftest import TEST_REDIS_URL, channel_layer
from tests.dashboard.replicafill import END, replica
from tests.queries.storefill import T0, fleet_named

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    # whitenoise streams static files with a sync iterator, which Django's ASGI handler
    # consumes in a thread and warns about; the files are small and this is the demo path.
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

T = TypeVar("T")
PASSWORD = "viewer-password-1"
HOSTILE = '<a href="https://evil.example/">x</a><img src=x onerror="window.__xss=1">'
HOSTILE_MODEL = '"><script>window.__xss=2</script>'
REDIS_LAYER = redis_channel_layers(TEST_REDIS_URL, prefix="fleetscope-test-browser")


@dataclass
class Site:
    url: str
    fleet: Fleet


@pytest.fixture
def server() -> Iterator[str]:
    with override_settings(CHANNEL_LAYERS=REDIS_LAYER), asgi_server() as url:
        yield url


def seconds_ago(seconds: float) -> float:
    """Seconds after storefill's T0 that were `seconds` ago (the store keys scrapes by T0)."""
    return (timezone.now() - T0).total_seconds() - seconds


@pytest.fixture
def site(server: str) -> Site:
    User.objects.create_user("viewer", password=PASSWORD)
    fleet = fleet_named("browser")
    start = seconds_ago(END + 20)
    for name in ("10.0.0.1:8000", "10.0.0.2:8000", "10.0.0.3:8000"):
        replica(fleet, name, start=start)
    replica(fleet, "10.0.0.4:8000", start=start, slow=True)
    replica(fleet, "10.0.0.5:8000", start=start, up=False)
    return Site(server, fleet)


def off_the_loop(work: Callable[[], T]) -> T:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()


def new_hostile_replica_published(fleet: Fleet) -> int:
    try:
        replica(fleet, "10.0.0.9:8000", start=seconds_ago(END + 20), reason=HOSTILE,
                model=HOSTILE_MODEL)  # fmt: skip
        live.watch(ViewScope(fleet))
        return live.overviews_publish()
    finally:
        connections.close_all()


def logged_in(page: Page, site: Site, path: str) -> None:
    page.goto(f"{site.url}/login/?next={path}")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-rendered=true]", timeout=30_000)


def test_the_replica_table_flags_the_slow_replica_and_links_to_its_view(site: Site) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        logged_in(page, site, f"/fleets/{site.fleet.slug}/")
        table = page.locator("#replica-table")
        expect(table.locator("tbody tr")).to_have_count(6)  # five replicas and the median
        slow = table.locator("tr", has_text="10.0.0.4:8000")
        expect(slow.locator("td.flag-high")).to_have_count(1)
        expect(slow.locator("td.flag-high")).to_contain_text("995 ms")
        down = table.locator("tr", has_text="10.0.0.5:8000")
        expect(down.locator("td.state-down")).to_contain_text("down since")
        expect(down.locator("td.state-down")).to_contain_text("connection refused")
        page.screenshot(path=screenshot_path("overview-replicas"), full_page=True)
        slow.locator("a").click()
        page.wait_for_url("**instance=10.0.0.4%3A8000*")
        page.wait_for_selector("body[data-rendered=true]")
        expect(page.locator("#window-note")).to_contain_text(
            "replica 10.0.0.4:8000", timeout=30_000
        )
        expect(page.locator("select[name=instance]")).to_have_value("10.0.0.4:8000")
        expect(page.locator("#live-state")).to_have_text("polling")
        page.click("nav.group-tabs >> text=Latency")
        page.wait_for_url("**/latency/?**")
        expect(page.locator(".panel-group")).to_have_count(1)
        expect(page.locator("#window-note")).to_contain_text(
            "replica 10.0.0.4:8000", timeout=30_000
        )
        expect(page.locator('[data-panel="latency.ttft"] .js-plotly-plot')).to_have_count(1)
        page.screenshot(path=screenshot_path("group-latency-replica"), full_page=True)


def test_hostile_label_values_pushed_over_the_websocket_stay_text(site: Site) -> None:
    with chromium() as browser:
        # Without CSP the page itself must keep injected markup inert: this test would
        # otherwise pass on the CSP alone even if the script inserted HTML.
        context = browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 900})
        page = context.new_page()
        logged_in(page, site, f"/fleets/{site.fleet.slug}/")
        expect(page.locator("#live-state")).to_have_text("live", timeout=30_000)
        # New data arrives: a replica whose labels carry markup, then the scheduler's push.
        # (Playwright's sync API runs an event loop here, so the ORM works on another thread.)
        assert off_the_loop(lambda: new_hostile_replica_published(site.fleet)) == 1
        legend = page.locator('[data-panel="traffic.requests"] .legendtext', has_text="onerror")
        expect(legend).to_have_count(1, timeout=30_000)
        assert HOSTILE in (legend.text_content() or "")
        # plotly.js reads a subset of HTML in trace names: no link may come out of a label.
        assert page.locator('[data-panel="traffic.requests"] .legend a').count() == 0
        # A payload with markup in the text fields the page shows, pushed as the scheduler does.
        cached = off_the_loop(lambda: live.latest_overview(ViewScope(site.fleet)))
        assert cached is not None
        payload = json.loads(cached)
        for panel in payload["panels"]:
            panel["notes"] = [HOSTILE]
        payload["source_state"] = {"status": "down", "since": None, "message": HOSTILE_MODEL}
        payload["replicas"]["rows"][0]["state"] = "down"
        payload["replicas"]["rows"][0]["note"] = HOSTILE
        message = {"type": "overview.update", "payload_json": json.dumps(payload)}
        layer = channel_layer()
        off_the_loop(
            lambda: async_to_sync(layer.group_send)(live.group_name(ViewScope(site.fleet)), message)
        )
        note = page.locator('[data-panel="latency.ttft"] .panel-note')
        expect(note).to_contain_text("onerror", timeout=30_000)
        assert HOSTILE in (note.text_content() or "")
        expect(page.locator("#source-banner")).to_contain_text(HOSTILE_MODEL)
        expect(page.locator("#replica-table td.state-down").first).to_have_text(HOSTILE)
        page.screenshot(path=screenshot_path("overview-hostile-labels"), full_page=True)
        assert page.evaluate("window.__xss") is None
        assert page.locator("main img, main script").count() == 0
        context.close()


def test_chart_times_are_utc_in_a_browser_outside_utc(site: Site) -> None:
    # plotly.js puts epoch milliseconds in the browser's zone; the footer says UTC.
    with chromium() as browser:
        context = browser.new_context(
            viewport={"width": 1400, "height": 900}, timezone_id="America/Los_Angeles"
        )
        page = context.new_page()
        logged_in(page, site, f"/fleets/{site.fleet.slug}/")
        plot = page.locator('[data-panel="latency.ttft"] .js-plotly-plot')
        expect(plot).to_have_count(1, timeout=30_000)
        end = plot.evaluate("plot => plot.layout.xaxis.range[1]")
        shown = datetime.fromisoformat(str(end)[:19]).replace(tzinfo=UTC)
        assert abs((timezone.now() - shown).total_seconds()) < 600, end
        expect(page.locator("footer")).to_contain_text("All times UTC")
