"""The SLO pages in headless Chromium against the real ASGI app, with fleets recorded by
fleetsim: one whose first replica is flooded (`traffic-burst`) at the end of fifteen
steady hours, so its TTFT SLO burns without having spent its budget yet, and a steady
one whose TTFT threshold (0.3 s) lies between bucket edges (0.25 and 0.5), with a
target between the two edges' fractions, so its attainment is an interval that
straddles the target: undecided.

Screenshots go to var/screenshots/ (tests.browser.SCREENSHOT_DIR).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from fleetsim.history import History
from inventory.history import history_import
from slo.evaluation import slo_status
from slo.models import Objective, Slo
from tests.browser import asgi_server, chromium, screenshot_path, trace_types_outside_the_bundle
from tests.roles import user_with_role
from tests.slo.conftest import END

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

PASSWORD = "viewer-password-1"
AT = datetime.fromtimestamp(END, UTC)
AT_QUERY = "?at=" + AT.strftime("%Y-%m-%dT%H:%M:%SZ")
EVALUATED = AT.replace(second=0).strftime("%Y-%m-%d %H:%M UTC")
HOURS = 15.0  # enough steady traffic that an hour of burn has not spent the budget
BURST_SECONDS = 1200.0


@dataclass
class Site:
    url: str


@pytest.fixture(scope="session")
def burst_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("slo-browser") / "burst.om"
    History(
        replicas=1,
        scenario="traffic-burst",
        hours=HOURS,
        step=60.0,
        seed=5,
        end=END,
        at=HOURS * 3600 - BURST_SECONDS,
        duration=BURST_SECONDS,
    ).write_openmetrics(path)
    return path


@pytest.fixture
def server() -> Iterator[str]:
    with asgi_server() as url:
        yield url


def undecided_target(slo: Slo) -> float:
    """A target between the fractions at the bucket edges around the threshold: the
    attainment interval then straddles it."""
    probe = slo_status(slo, backend="local", at=AT)
    attainment = probe.objectives[0].attainment
    assert attainment is not None and not attainment.is_exact, probe.objectives[0].reason
    return round((attainment.lower + attainment.upper) / 2, 3)


def burning_target(slo: Slo) -> float:
    """A target the held hours still meet overall (budget left) while the last hour and
    the last five minutes burn it faster than the 1h/5m page's factor."""
    probe = slo_status(slo, backend="local", at=AT).objectives[0]
    assert probe.attainment is not None and probe.attainment.is_exact
    (page,) = [row for row in probe.burn if row.pair == "1h/5m"]
    assert page.long.bad_ratio is not None and page.short.bad_ratio is not None
    worst_allowed = min(page.long.bad_ratio.lower, page.short.bad_ratio.lower) / page.factor
    lowest, highest = 1 - worst_allowed, probe.attainment.lower
    assert lowest < highest, (lowest, highest)
    return round((lowest + highest) / 2, 3)


@pytest.fixture
def site(server: str, burst_history: Path, current_history: Path) -> Site:
    user_with_role("viewer", "viewer", password=PASSWORD)
    burst = history_import(fleet_slug="burst", fleet_name="Burst", path=burst_history).fleet
    burning = Slo.objects.create(
        fleet=burst, slug="chat-ttft", name="Chat TTFT", owner="llm-platform", window_days=7,
        runbook_url="https://runbooks.example/chat-ttft",
    )  # fmt: skip
    ttft = Objective.objects.create(slo=burning, kind="ttft", threshold_seconds=2.5, target=0.9)
    ttft.target = burning_target(burning)
    ttft.save()
    Objective.objects.create(slo=burning, kind="success", target=0.9)
    steady = history_import(fleet_slug="prod", fleet_name="Production", path=current_history)
    undecided = Slo.objects.create(
        fleet=steady.fleet, slug="ttft-300", name="TTFT 300 ms", owner="serving"
    )
    ttft = Objective.objects.create(slo=undecided, kind="ttft", threshold_seconds=0.3, target=0.9)

    ttft.target = undecided_target(undecided)
    ttft.save()
    return Site(server)


def logged_in(browser: Browser, site: Site, path: str, timezone_id: str | None = None) -> Page:
    viewport: ViewportSize = {"width": 1400, "height": 1000}
    page = browser.new_context(viewport=viewport, timezone_id=timezone_id).new_page()
    page.goto(f"{site.url}/login/?next={path}")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    return page


def test_the_list_and_details_show_a_burning_and_an_undecided_slo(site: Site) -> None:
    with chromium() as browser:
        page = logged_in(browser, site, f"/slos/{AT_QUERY}")
        table = page.locator("#slo-table")
        expect(table.locator("tbody tr")).to_have_count(2)
        burning = table.locator("tr", has_text="Chat TTFT")
        expect(burning.locator(".state").first).to_have_text("burning (page)")
        expect(burning).to_contain_text("firing")
        undecided = table.locator("tr", has_text="TTFT 300 ms")
        expect(undecided.locator(".state").first).to_have_text(
            "undecided: the interval straddles the target"
        )
        expect(undecided.locator(".figure.inexact").first).to_contain_text("\u2013")
        page.screenshot(path=screenshot_path("slo-list"), full_page=True)

        burning.locator("a").first.click()
        page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
        expect(page.locator("#slo-state")).to_have_text("burning (page)")
        expect(page.locator("#objective-ttft tr[data-firing=firing]").first).to_be_visible()
        expect(page.locator("#objective-ttft .js-plotly-plot")).to_have_count(3)
        assert trace_types_outside_the_bundle(page) == []
        expect(page.locator("#worst-objective")).to_contain_text("TTFT")
        page.locator("#objective-ttft details.provenance summary").click()
        expect(page.locator("#objective-ttft details.provenance")).to_contain_text(
            "vllm:time_to_first_token_seconds"
        )
        page.screenshot(path=screenshot_path("slo-detail-burning"), full_page=True)

        page.goto(f"{site.url}/slos/prod/ttft-300/{AT_QUERY}")
        page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
        expect(page.locator("#slo-state")).to_have_text(
            "undecided: the interval straddles the target"
        )
        attainment = page.locator("#objective-ttft .attainment .figure")
        expect(attainment).to_have_text(re.compile(r"^\d+\.\d+\u2013\d+\.\d+%$"))
        expect(attainment).to_have_attribute(
            "title", re.compile("between buckets 250 ms and 500 ms")
        )
        page.screenshot(path=screenshot_path("slo-detail-undecided"), full_page=True)


def test_times_are_utc_and_labelled_so_in_a_browser_outside_utc(site: Site) -> None:
    with chromium() as browser:
        path = f"/slos/burst/chat-ttft/{AT_QUERY}"
        page = logged_in(browser, site, path, timezone_id="America/Los_Angeles")
        page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
        assert page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == (
            "America/Los_Angeles"
        )
        expect(page.locator("#evaluated-at")).to_have_text(EVALUATED)
        expect(page.locator("footer")).to_contain_text("All times UTC")
        latency = page.locator("#objective-ttft [data-chart$='-latency']")
        expect(latency.locator(".xtitle")).to_have_text("time (UTC)")
        # The chart's times are UTC text, which plotly.js draws as written whatever the
        # browser's zone: the axis ends at the evaluation time in UTC, not Los Angeles' 03:06.
        end = latency.evaluate("plot => plot.layout.xaxis.range[1]")
        assert end.startswith(AT.strftime("%Y-%m-%d %H:")), end
        page.screenshot(path=screenshot_path("slo-detail-los-angeles"), full_page=True)
