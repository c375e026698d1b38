"""The cost page in headless Chromium against the real ASGI app, over the simulated fleet
(tests/capacity/conftest.py). Screenshots go to var/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from capacity.pages.cost import iso
from inventory.models import Fleet
from tests.browser import asgi_server, chromium, screenshot_path, trace_types_outside_the_bundle
from tests.roles import user_with_role

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

PASSWORD = "viewer-password-1"


@pytest.fixture
def server() -> Iterator[str]:
    with asgi_server() as url:
        yield url


def test_the_cost_page_shows_the_tenant_table_and_draws_the_trend(
    server: str, own_sim_fleet: Fleet
) -> None:
    user_with_role("viewer", "viewer", password=PASSWORD)
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    path = f"/cost/sim/?from={iso(end - timedelta(hours=1))}&to={iso(end)}"
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(f"{server}/login/?next={path.replace('&', '%26')}")
        page.fill("#id_username", "viewer")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
        table = page.locator("#tenant-table")
        for tenant in ("acme", "hooli", "initech", "unattributed", "idle", "bill"):
            expect(table.locator(f'tr[data-tenant="{tenant}"]')).to_have_count(1)
        expect(table.locator('tr[data-tenant="acme"] td.per-million .figure')).to_contain_text(
            "\u2013"
        )
        expect(page.locator("#period-text")).to_contain_text("UTC")
        expect(page.locator("#reconciliation .recon-ok")).to_have_count(2)
        expect(page.locator("#trend-plot .main-svg").first).to_be_visible()
        expect(page.locator("#trend-plot .xtitle")).to_have_text("time (UTC)")
        assert trace_types_outside_the_bundle(page) == []
        page.screenshot(path=screenshot_path("cost-report"), full_page=True)
