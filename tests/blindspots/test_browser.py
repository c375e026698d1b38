"""The blind-spot page in headless Chromium against the real ASGI app: a viewer uploads a
Grafana dashboard on a fleet recorded by fleetsim and sees each panel's verdict, then a
malformed file is refused with its reason while the page keeps its verdicts.

Screenshots go to var/screenshots/ (tests.browser.SCREENSHOT_DIR)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Dialog, Page, ViewportSize, expect

from tests.blindspots.audit_fleets import DASHBOARD, REPLICAS, RULES, skewed_fleet
from tests.browser import asgi_server, chromium, screenshot_path
from tests.roles import user_with_role

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

PASSWORD = "viewer-password-1"


@pytest.fixture
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    user_with_role("viewer", "oncall", password=PASSWORD)
    skewed_fleet(tmp_path_factory)
    with asgi_server() as url:
        yield url


def logged_in(browser: Browser, url: str, path: str) -> Page:
    viewport: ViewportSize = {"width": 1400, "height": 1000}
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(f"{url}/login/?next={path}")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    return page


def test_uploading_a_dashboard_shows_each_panels_verdict(site: str, tmp_path: Path) -> None:
    dialogs: list[str] = []
    with chromium() as browser:
        page = logged_in(browser, site, "/blindspots/skewed/")

        def dismissed(dialog: Dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", dismissed)
        expect(page.locator("#no-run")).to_contain_text("has not been audited yet")
        page.set_input_files("#upload-form input[name=files]", [DASHBOARD, RULES])
        page.click("#upload-form button[type=submit]")
        page.wait_for_load_state("load")

        expect(page.locator("#upload-stored")).to_contain_text("c_audit_dashboard.json")
        items = page.locator("#items tbody tr")
        expect(items.first).to_be_visible()
        assert items.count() >= 10
        # Counts by verdict at the top, in words.
        expect(page.locator('#counts [data-verdict="blind"]')).to_contain_text("blind")
        expect(page.locator('#counts [data-verdict="errors"]')).to_contain_text("3")
        # The renamed metric's panel: partly blind, the replica named, the rewrite shown.
        kv = items.filter(has_text="KV cache usage (old name)")
        expect(kv.locator(".bs-verdict").first).to_have_text("partly blind")
        expect(kv.locator(".bs-replicas")).to_contain_text("1 of 3")
        expect(kv.locator(".bs-diff")).to_contain_text("vllm:kv_cache_usage_perc")
        # The family the rolled-back replica lost: since when, in UTC.
        queue = items.filter(has_text="QueueByReason")
        expect(queue.locator(".bs-since")).to_contain_text(" UTC")
        expect(queue.locator(".bs-replicas")).to_contain_text(REPLICAS[0])
        expect(items.filter(has_text="Requests running").locator(".bs-verdict").first).to_have_text(
            "live"
        )
        # A title with a script is shown as text and never runs.
        expect(items.filter(has_text="<script>alert('panel')</script>")).to_have_count(1)
        expect(page.locator("#errors")).to_contain_text("unclosed left parenthesis")
        expect(page.locator("#sources tbody tr")).to_have_count(2)
        page.screenshot(path=screenshot_path("blindspots"), full_page=True)

        broken = tmp_path / "broken.json"
        broken.write_text('{"panels": [ {"title": ')
        page.set_input_files("#upload-form input[name=files]", broken)
        page.click("#upload-form button[type=submit]")
        page.wait_for_load_state("load")
        expect(page.locator("#upload-errors")).to_contain_text("broken.json")
        expect(page.locator("#items tbody tr").first).to_be_visible()
        expect(page.locator("#sources tbody tr")).to_have_count(2)
        page.screenshot(path=screenshot_path("blindspots-bad-upload"), full_page=True)
    assert dialogs == []
