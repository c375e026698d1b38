"""`make demo` on the embedded default, driven through the real server in headless Chromium."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from dashboard.panels import PANELS
from devtools.ports import free_port
from devtools.terminal import with_terminal_signals
from devtools.waiting import get_when_listening, wait_until
from fleetscope.embedded import port_is_free
from tests.browser import chromium, screenshot_path, trace_types_outside_the_bundle

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.browser


@dataclass
class Demo:
    url: str
    username: str
    password: str
    process: subprocess.Popen[str]
    port: int


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("SECRET_KEY", None)
    env["FLEETSCOPE_VAR_DIR"] = str(tmp_path / "var")
    # A little over the default one-hour view of history, not the demo's six: the same
    # fill-then-continue path in a third of the start-up time.
    env["FLEETSCOPE_DEMO_HISTORY_HOURS"] = "1.1"
    process = subprocess.Popen(
        ["make", "--no-print-directory", "demo", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=with_terminal_signals,
    )
    assert process.stdout is not None
    login = url = None
    output = []
    for line in process.stdout:
        output.append(line)
        if match := re.match(r"login: (\S+) / (\S+)", line):
            login = match.groups()
        if match := re.search(r"running at (http://\S+)", line):
            url = match.group(1)
            break
    assert login and url, "make demo did not print the login and the URL:\n" + "".join(output)
    assert any(line.startswith("demo fleet: 4 simulated vLLM replicas") for line in output)
    get_when_listening(f"{url}/healthz", timeout=60)
    yield Demo(url, login[0], login[1], process, port)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def test_make_demo_writes_the_settings_the_readme_loads(demo: Demo, tmp_path: Path) -> None:
    # README: "set -a; . var/demo.env; set +a" before its commands, beside a running demo.
    var = tmp_path / "var"
    lines = (var / "demo.env").read_text(encoding="utf-8").splitlines()
    settings = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    assert settings == {
        "FLEETSCOPE_VAR_DIR": str(var),
        "FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK": "true",
        "SECRET_KEY_FILE": str(var / "secret-key"),
    }
    assert (var / "secret-key").stat().st_mode & 0o077 == 0


def test_make_demo_serves_login_then_the_base_layout(demo: Demo) -> None:
    with chromium() as browser:
        # A browser outside UTC, as many on-call engineers' are: every time shown is UTC.
        page = browser.new_page(
            viewport={"width": 1280, "height": 800}, timezone_id="America/New_York"
        )
        page.goto(demo.url)
        assert "/login/" in page.url
        page.screenshot(path=screenshot_path("demo-login"))
        page.fill("#id_username", demo.username)
        page.fill("#id_password", demo.password)
        page.click("button[type=submit]")
        page.wait_for_selector("nav[aria-label=Sections]")
        nav = page.inner_text("nav[aria-label=Sections]")
        for label in ("Fleet", "Inventory", "SLOs", "Incidents", "Capacity", "Cost"):
            assert label in nav
        assert "Demo fleet (simulated)" in page.inner_text("#fleets")
        page.screenshot(path=screenshot_path("demo-fleet"), full_page=True)
        page.click("text=what it exposes")
        # The in-process scheduler scrapes at start-up; the page shows it once it has run.
        for _ in range(60):
            if page.locator("#family-matrix-vllm").count():
                break
            page.wait_for_timeout(500)
            page.reload()
        health = page.inner_text("#scrape-health")
        assert health.lower().count("\tup") == 10, health
        assert "vllm:kv_cache_usage_perc" in page.inner_text("#family-matrix-vllm")
        assert "ready" in page.inner_text("#capability-map").lower()
        page.screenshot(path=screenshot_path("demo-inventory"), full_page=True)
        page.click("nav >> text=Fleet")
        page.click("text=Demo fleet (simulated)")
        page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
        page.screenshot(path=screenshot_path("demo-overview-first"), full_page=True)
        expect(page.locator("#live-state")).to_have_text("live", timeout=30_000)
        # Rates need two scrapes; the websocket push fills the rest in without a reload.
        # fleetsim runs no speculative decoding: those panels say so instead of drawing.
        not_simulated = [p for p in PANELS if p.id in ("engine.spec_decode", "engine.spec_length")]
        unavailable = page.locator(".chart.unavailable")
        expect(unavailable).to_have_count(len(not_simulated), timeout=90_000)
        # Every panel on screen at once: each is drawn as soon as it can be, not when the
        # browser is idle (a loaded machine may never idle long enough to draw them all
        # between two pushes). Drawing panels off screen is test_overview_browser's.
        page.set_viewport_size({"width": 1280, "height": page_height(page)})
        try:
            page.wait_for_selector("body[data-all-drawn=true]", timeout=60_000)
        except PlaywrightTimeoutError:
            raise AssertionError(f"panels never all drawn; not drawn: {undrawn(page)}") from None
        page.set_viewport_size({"width": 1280, "height": 800})
        drawn = page.locator(".chart .plot.js-plotly-plot").count()
        assert drawn == len(PANELS) - len(not_simulated), drawn
        assert trace_types_outside_the_bundle(page) == []
        page.screenshot(path=screenshot_path("demo-overview"), full_page=True)
        # The history filled in before serving: the default view has lines from its start.
        first, range_start, range_end = page.locator(
            '[data-panel="traffic.requests"] .js-plotly-plot'
        ).evaluate(
            """plot => {
                const trace = plot.data[0];
                const xs = trace.x.filter((x, i) => trace.y[i] !== null);
                return [xs[0], plot.layout.xaxis.range[0], plot.layout.xaxis.range[1]];
            }"""
        )
        start, end, lines_from = (_utc(text) for text in (range_start, range_end, first))
        assert (lines_from - start) <= 0.1 * (end - start), (first, range_start, range_end)
        # Four simulated replicas, each up, against the fleet median.
        rows = page.locator("#replica-table tbody tr[data-state]")
        expect(rows).to_have_count(4)
        expect(page.locator("#replica-table td.state-up")).to_have_count(4)
        expect(page.locator("#replica-table tr.median")).to_contain_text("fleet median")
        first = rows.first.locator("a").inner_text()
        rows.first.locator("a").click()
        expect(page.locator("#window-note")).to_contain_text(f"replica {first}", timeout=30_000)
        page.click("nav.group-tabs >> text=Latency")
        expect(page.locator(".panel-group")).to_have_count(1)
        expect(page.locator('[data-panel="latency.ttft"] .js-plotly-plot')).to_have_count(
            1, timeout=30_000
        )
        page.screenshot(path=screenshot_path("demo-latency-one-replica"), full_page=True)
        # A long range labels days, never "00:00 00:00 00:00" (the browser is in New York).
        page.goto(f"{demo.url}/fleets/demo/traffic/?since=3d")
        plot = page.locator('[data-panel="traffic.requests"] .js-plotly-plot')
        expect(plot).to_have_count(1, timeout=30_000)
        ticks = plot.locator(".xtick text").all_text_contents()
        assert len(ticks) >= 2 and len(set(ticks)) == len(ticks), ticks
        assert all(re.fullmatch(r"\d{2} [A-Z][a-z]{2}", tick) for tick in ticks), ticks
        page.screenshot(path=screenshot_path("demo-traffic-3-days"), full_page=True)
        page.click("text=Incidents")
        incidents = page.inner_text("main")
        assert "No open incident." in incidents and "Runbooks" in incidents


def page_height(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollHeight"))


def undrawn(page: Page) -> list[str]:
    return list(
        page.evaluate(
            """[...document.querySelectorAll('figure.chart[data-panel]')]
                .filter(f => f.dataset.drawn !== 'true').map(f => f.dataset.panel)"""
        )
    )


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(str(text)[:19]).replace(tzinfo=UTC)


def test_ctrl_c_stops_everything_make_demo_started(demo: Demo) -> None:
    os.killpg(demo.process.pid, signal.SIGINT)
    assert demo.process.wait(timeout=30) is not None
    wait_until(lambda: True if port_is_free("127.0.0.1", demo.port) else None, what="port freed")
