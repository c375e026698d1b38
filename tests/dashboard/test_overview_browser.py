"""The overview in headless Chromium against the real ASGI app: the replica table and its
click-through, group pages, and hostile label values arriving over the websocket.

The server is uvicorn running `fleetscope.asgi.application` in a thread of the
test process (so it sees the test database), with the Redis channel layer,
which lets this thread push to the server's websocket consumers the way the
scheduler does in production.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.db import connections
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Page, Request, expect

from dashboard import live
from fleetscope.lib import gzipped
from fleetscope.lib.channel_layers import redis_channel_layers
from inventory.access import ViewScope
from inventory.models import Fleet
from tests.browser import asgi_server, chromium, screenshot_path
from tests.conftest import TEST_REDIS_URL, channel_layer
from tests.dashboard.replicafill import END, replica
from tests.queries.storefill import T0, fleet_named
from tests.roles import user_with_role

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
    user_with_role("viewer", "viewer", password=PASSWORD)
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
        # Its p99 lies in the 0.5-1 s bucket: shown as the bucket, not as "995 ms".
        expect(slow.locator("td.flag-high")).to_have_text("500 ms–1 s")
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


def test_a_wide_bucket_p99_shows_its_bucket_and_latency_axes_switch_to_log(site: Site) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        logged_in(page, site, f"/fleets/{site.fleet.slug}/")
        table = page.locator("#replica-table")
        ttft = "td:nth-child(5)"  # after the replica, its state, requests and tokens
        slow = table.locator("tr", has_text="10.0.0.4:8000").locator(ttft)
        expect(slow).to_have_text("500 ms–1 s")
        expect(slow).to_have_class("flag flag-high bucket")
        title = slow.get_attribute("title") or ""
        assert title.startswith("TTFT p99 interpolated as 995 ms within (500 ms, 1 s]; high "), (
            title
        )
        assert title.endswith("the whole bucket is past the flag threshold"), title
        # Every TTFT of the others is under 0.1 s: a p99 of "99 ms" would claim too much.
        quick = table.locator("tr", has_text="10.0.0.1:8000").locator(ttft)
        expect(quick).to_have_text("0–100 ms")
        median = table.locator("tr.median").locator(ttft)
        expect(median).to_have_text("0–100 ms")
        expect(page.locator("#replicas-precision")).to_contain_text("wider than 25% of its value")
        # Requests are counted, not bucketed: shown as values.
        requests = table.locator("tr", has_text="10.0.0.1:8000").locator("td:nth-child(3)")
        expect(requests).not_to_contain_text("–")
        expect(requests).not_to_have_class(re.compile("bucket"))
        page.locator("#replicas-title").scroll_into_view_if_needed()
        table.screenshot(path=screenshot_path("replicas-wide-buckets"))

        # The TTFT panel: the hover names the bucket, and the y axis toggles linear/log.
        panel = page.locator('[data-panel="latency.ttft"]')
        plot = panel.locator(".js-plotly-plot")
        expect(plot).to_have_count(1, timeout=30_000)
        toggle = panel.locator("button.scale-toggle")
        expect(toggle).to_have_attribute("aria-pressed", "false")  # 50 ms to 1 s: linear
        panel.scroll_into_view_if_needed()
        hover = plot.evaluate(
            """plot => {
                const i = plot.data.findIndex(t => t.name === "p99");
                const n = plot.data[i].y.length - 1;
                Plotly.Fx.hover(plot, [{curveNumber: i, pointNumber: n}]);
                return document.querySelector(
                    '[data-panel="latency.ttft"] .hoverlayer .hovertext').textContent;
            }"""
        )
        assert hover.endswith("s, interpolated within (0.5 s, 1 s]"), hover
        panel.screenshot(path=screenshot_path("latency-quantile-hover"))
        plot.evaluate("plot => Plotly.Fx.unhover(plot)")
        toggle.click()
        expect(toggle).to_have_attribute("aria-pressed", "true")
        assert plot.evaluate("plot => plot.layout.yaxis.type") == "log"
        panel.screenshot(path=screenshot_path("latency-log-scale"))
        toggle.click()
        assert plot.evaluate("plot => plot.layout.yaxis.type") == "linear"
        # Panels that are not latency quantiles have no toggle.
        expect(page.locator('[data-panel="traffic.requests"] .scale-toggle')).to_have_count(0)


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
        message = {"type": "overview.update", "payload_gzip": gzipped.compress(json.dumps(payload))}
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


POLL_MS = 15_000  # the page's polling interval (fleet_overview/live_updates.js)


def log_in(page: Page, site: Site, path: str) -> None:
    """Log in and land on `path`, without waiting for a render (a bad URL has none)."""
    page.goto(f"{site.url}/login/?next={quote(path)}")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")


def json_requests(page: Page) -> list[str]:
    """The overview JSON requests the page makes from now on."""
    seen: list[str] = []

    def note(request: Request) -> None:
        if "overview.json" in request.url:
            seen.append(request.url)

    page.on("request", note)
    return seen


def test_a_panel_the_fleet_is_not_configured_for_is_grey_and_names_what_enables_it(
    site: Site,
) -> None:
    # The replicas run without speculative decoding: not a failure, so not red.
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        logged_in(page, site, f"/fleets/{site.fleet.slug}/engine/")
        panel = page.locator('[data-panel="engine.spec_decode"]')
        badge = panel.locator(".panel-status")
        expect(badge).to_have_text("not configured", timeout=30_000)
        expect(badge).to_have_class("panel-status badge badge-muted")
        expect(panel).to_have_class("chart not-configured unavailable")
        # What would enable it, as the catalog says, once (not again as the planner's note).
        note = panel.locator(".panel-note")
        expect(note).to_have_text(
            "not configured on this fleet: needs a speculative-decoding config"
        )
        grey = badge.evaluate("b => getComputedStyle(b).backgroundColor")
        red = page.evaluate(
            "() => { const b = document.createElement('span'); b.className = 'badge badge-bad';"
            " document.body.appendChild(b); return getComputedStyle(b).backgroundColor; }"
        )
        assert grey == "rgb(238, 241, 244)" and grey != red
        # Failures keep their colour: no not-configured panel is drawn as one.
        expect(page.locator(".chart.not-configured .badge-bad")).to_have_count(0)
        page.locator("#g-engine").scroll_into_view_if_needed()
        page.screenshot(path=screenshot_path("panel-not-configured"), full_page=True)
        panel.screenshot(path=screenshot_path("panel-not-configured-closeup"))


def test_signing_out_elsewhere_stops_polling_with_a_way_back(site: Site) -> None:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.clock.install()  # the 15 s poll timer runs when the test says so
        path = f"/fleets/{site.fleet.slug}/?since=6h"  # not the default view: it polls
        logged_in(page, site, path)
        expect(page.locator("body")).to_have_attribute("data-polling", "on")
        requests = json_requests(page)
        # Log out in another tab of the same browser.
        other = context.new_page()
        other.goto(f"{site.url}/")
        other.click("form.logout button[type=submit]")
        other.wait_for_url("**/")
        other.close()
        page.clock.run_for(POLL_MS + 1_000)
        alert = page.locator("#view-alert")
        expect(alert).to_have_text("Signed out — log in again", timeout=30_000)
        link = alert.locator("a", has_text="log in again")
        expect(link).to_have_attribute("href", f"/login/?next={quote(path, safe='')}")
        expect(page.locator("#live-state")).to_have_text("signed out")
        expect(page.locator("body")).to_have_attribute("data-polling", "stopped")
        assert "Unexpected token" not in (page.locator("main").text_content() or "")
        page.clock.run_for(2 * POLL_MS)
        page.wait_for_timeout(500)  # room for a request that should not come
        assert len(requests) == 1, requests
        page.screenshot(path=screenshot_path("overview-signed-out"), full_page=True)
        link.click()
        page.wait_for_url("**/login/?next=*")
        context.close()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("since=7x", "since must be one of 15m, 1h, 3h, 6h, 12h, 24h, 3d, not '7x'"),
        ("backend=prometheus", "Prometheus is not configured (PROMETHEUS_URL is empty)"),
        ("end=2999-01-01T00:00:00Z", "end '2999-01-01T00:00:00Z' is in the future"),
    ],
)
def test_a_bad_url_parameter_shows_one_message_and_asks_nothing_more(
    site: Site, query: str, message: str
) -> None:
    with override_settings(PROMETHEUS_URL=None), chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.clock.install()
        requests = json_requests(page)
        log_in(page, site, f"/fleets/{site.fleet.slug}/?{query}")
        alert = page.locator("[role=alert]:visible")
        expect(alert).to_have_count(1)
        expect(alert).to_contain_text(message)
        expect(page.locator("#live-state")).to_have_text("stopped")
        expect(page.locator("body")).to_have_attribute("data-polling", "stopped")
        expect(page.locator(".chart")).to_have_count(0)  # no page of empty or red panels
        page.clock.run_for(2 * POLL_MS + 1_000)
        page.wait_for_timeout(500)
        assert requests == []
        name = query.split("=")[0]
        expect(page.locator(f"#filters [name={name}]")).to_have_attribute("aria-invalid", "true")
        page.screenshot(path=screenshot_path(f"overview-bad-{name}"), full_page=True)


def disabled(fleet: Fleet, instance: str) -> int:
    try:
        return fleet.endpoints.filter(url__contains=f"//{instance}/").update(enabled=False)
    finally:
        connections.close_all()


def test_a_replica_gone_while_polling_keeps_the_last_view_and_stops(site: Site) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.clock.install()
        logged_in(page, site, f"/fleets/{site.fleet.slug}/latency/?instance=10.0.0.1:8000")
        plot = page.locator('[data-panel="latency.ttft"] .js-plotly-plot')
        expect(plot).to_have_count(1, timeout=30_000)
        requests = json_requests(page)
        assert off_the_loop(lambda: disabled(site.fleet, "10.0.0.1:8000")) == 1
        page.clock.run_for(POLL_MS + 1_000)
        alert = page.locator("#view-alert")
        expect(alert).to_contain_text(
            "instance '10.0.0.1:8000' is not a vLLM replica of this fleet;"
            " its replicas: 10.0.0.2:8000, 10.0.0.3:8000",
            timeout=30_000,
        )
        expect(alert).to_contain_text("the charts below are the last good view")
        expect(alert.locator("a")).to_have_attribute("href", f"/fleets/{site.fleet.slug}/latency/")
        expect(plot).to_have_count(1)  # the last good chart stays
        expect(page.locator("body")).to_have_attribute("data-polling", "stopped")
        page.clock.run_for(2 * POLL_MS)
        page.wait_for_timeout(500)
        assert len(requests) == 1, requests
        page.screenshot(path=screenshot_path("overview-replica-gone"), full_page=True)


def test_off_screen_panels_are_drawn_when_scrolled_to_and_updates_redraw_in_place(
    site: Site,
) -> None:
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        # A page that is never idle: only scrolling can bring a far panel's chart.
        page.add_init_script("window.requestIdleCallback = function () { return 0; };")
        logged_in(page, site, f"/fleets/{site.fleet.slug}/")
        expect(page.locator("#live-state")).to_have_text("live", timeout=30_000)
        first = page.locator('[data-panel="traffic.requests"]')
        expect(first).to_have_attribute("data-drawn", "true")
        # The last panel with a chart, far below the first screen.
        waiting = page.locator('figure.chart[data-drawn="false"]').last
        last = page.locator(f'[data-panel="{waiting.get_attribute("data-panel")}"]')
        expect(last).to_have_attribute("data-drawn", "false")
        assert last.evaluate("figure => figure.getBoundingClientRect().top") > 2 * 900
        expect(last.locator(".js-plotly-plot")).to_have_count(0)
        expect(page.locator("body")).to_have_attribute("data-all-drawn", "false")
        last.scroll_into_view_if_needed()
        expect(last).to_have_attribute("data-drawn", "true", timeout=30_000)
        expect(last.locator(".js-plotly-plot")).to_have_count(1)

        # A live update redraws the chart on screen in place: the same SVG, new data.
        page.evaluate("window.scrollTo(0, 0)")
        first.locator("svg.main-svg").first.evaluate("svg => { svg.__kept = true; }")
        payload = json.loads(
            page.evaluate(
                "() => fetch(document.getElementById('overview-config').dataset.jsonUrl)"
                ".then(response => response.text())"
            )
        )
        panel = next(p for p in payload["panels"] if p["id"] == "traffic.requests")
        panel["figure"]["data"][0]["name"] = "renamed-by-the-update"
        message = {"type": "overview.update", "payload_gzip": gzipped.compress(json.dumps(payload))}
        layer = channel_layer()
        off_the_loop(
            lambda: async_to_sync(layer.group_send)(live.group_name(ViewScope(site.fleet)), message)
        )
        page.wait_for_function(
            "() => document.querySelector('[data-panel=\"traffic.requests\"] .js-plotly-plot')"
            ".data.some(trace => trace.name === 'renamed-by-the-update')",
            timeout=30_000,
        )
        assert first.locator("svg.main-svg").first.evaluate("svg => svg.__kept === true")
        expect(first.locator(".js-plotly-plot")).to_have_count(1)
