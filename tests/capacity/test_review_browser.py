"""The capacity review of the simulated fleet in headless Chromium against the real ASGI
app: logged in through the login page, both models' answers visible, the ledgers
readable. The screenshot goes to var/screenshots/capacity-review.png."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from capacity.plans import plan_review
from inventory.models import Fleet
from tests.browser import asgi_server, chromium, screenshot_path
from tests.capacity.conftest import LLAMA_8B_CONFIG
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


def logged_in(browser: Browser, url: str, path: str) -> Page:
    viewport: ViewportSize = {"width": 1400, "height": 1000}
    page = browser.new_context(viewport=viewport).new_page()
    page.goto(f"{url}/login/?next={path}")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    return page


def test_the_capacity_review_of_the_simulated_fleet_reads_answer_first(
    server: str, own_sim_fleet: Fleet
) -> None:
    user_with_role("viewer", "admin", password=PASSWORD)  # it also adds a model profile
    # The simulated traffic follows the time of day: R_total is what the review says (read
    # before the browser starts: its event loop forbids database calls in this thread).
    r_totals = {}
    for model in ("llama-3.1-8b-instruct", "llama-3.1-70b-instruct"):
        review = plan_review(own_sim_fleet, model_name=model, backend="local").review
        assert review is not None and review.r_total_replicas is not None
        r_totals[model] = review.r_total_replicas
    with chromium() as browser:
        page = logged_in(browser, server, "/capacity/sim/")
        expect(page.locator("h1")).to_have_text("Capacity of Simulated")
        for model in ("llama-3.1-8b-instruct", "llama-3.1-70b-instruct"):
            section = page.locator(f"section.model-review[data-model='{model}']")
            expect(section).to_be_visible()
            answer = section.locator(".answer")
            r_total = r_totals[model]
            expect(answer.locator(".r-total-value")).to_have_text(str(r_total))
            expect(answer).to_contain_text("N+1 on the requirement: PASS")
            expect(answer).to_contain_text(
                f"With one replica lost at peak the other {r_total - 1} run at"
            )
            expect(section.locator("[data-ledger='cache config']")).to_contain_text(
                "KV tokens the fleet has"
            )
            expect(section.locator(".origin-example").first).to_be_visible()
            expect(section.locator(".origin-needs").first).to_be_visible()
        # Nothing spills out of the page sideways.
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, overflow
        page.screenshot(path=screenshot_path("capacity-review"), full_page=True)
        # A config the formulas do not cover is refused, naming its field; a Llama one is not.
        page.goto(f"{server}/capacity/profiles/new/")
        page.fill("#id_name", "DeepSeek-V3")
        page.fill("#id_config_text", json.dumps({**LLAMA_8B_CONFIG, "kv_lora_rank": 512}))
        page.click("#profile-new button[type=submit]")
        expect(page.locator("#profile-new .errorlist")).to_contain_text("kv_lora_rank:")
        page.screenshot(path=screenshot_path("capacity-profile-refused"), full_page=True)
        page.fill("#id_name", "Llama-3.1-8B")
        page.fill("#id_config_text", json.dumps(LLAMA_8B_CONFIG))
        page.click("#profile-new button[type=submit]")
        expect(page.locator("#messages")).to_contain_text("Model profile Llama-3.1-8B created")
        expect(page.locator("#model-profiles")).to_contain_text("Llama-3.1-8B")
        page.screenshot(path=screenshot_path("capacity-index"), full_page=True)
