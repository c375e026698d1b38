"""An incident in headless Chromium against the real ASGI app, end to end: fleetsim's
`gpu-throttle` history (one replica's GPU clocks down, its decode slows and the fleet's
TPOT with it) is loaded into the embedded store, Alertmanager's webhook opens the incident
through the live server, and the walk over the incident's window is frozen into it (the
webhook's own walk runs at "now", long after this historical window). The page is read
in a browser in New York: the tree names the throttled GPU as the cause with its figures,
the canary plan says FleetScope applies nothing, times read UTC, and the Markdown export
carries the leaf and the plan.

Screenshots go to var/screenshots/ (tests.browser.SCREENSHOT_DIR).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, ViewportSize, expect

from devtools.waiting import wait_until
from fleetscope.lib.utc import utc_iso, utc_text, utc_text_of_iso
from inventory.history import history_import
from tests.browser import asgi_server, chromium, screenshot_path, trace_types_outside_the_bundle
from tests.roles import user_with_role
from tests.triage.factories import TOKEN
from tests.triage.walk.scenario_walks import history_of, incident_window
from triage.export import NOTHING_APPLIED, figure_row
from triage.incidents import incident_walk_record
from triage.models import EventKind, Incident, IncidentEvent, Runbook
from triage.runbooks import runbook_slug, runbooks_seed
from triage.walk import walk_fleet

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

PASSWORD = "viewer-password-1"
LEAF = "tpot.straggler.gpu_throttle"
TITLE = "Chat TPOT burning fast on prod"
TIMEZONE = "America/New_York"


@dataclass(frozen=True)
class Scene:
    """What the page must show, computed before the browser starts (its event loop
    forbids database calls in the test's thread)."""

    url: str
    incident_id: int
    started: str  # the breach's start as the pages write it (UTC)
    window_start: str
    window_end: str
    figures: list[dict[str, str]]  # the leaf's figures as the page formats them
    replicas: tuple[str, ...]
    runbook: str
    runbook_title: str
    incident_runbook_title: str
    canary: dict[str, Any]


@pytest.fixture
def server() -> Iterator[str]:
    with asgi_server() as url:
        yield url


def alertmanager_payload(starts_at: str) -> dict[str, Any]:
    alert = {
        "status": "firing",
        "labels": {
            "alertname": "SloFastBurn",
            "fleetscope_fleet": "prod",
            "severity": "page",
            "objective": "tpot",
        },
        "annotations": {"summary": TITLE, "description": "TPOT p99 burns 14x the budget"},
        "startsAt": starts_at,
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.example/graph",
        "fingerprint": "9c1e7a4b2d3f5e60",
    }
    return {
        "version": "4",
        "groupKey": '{}:{alertname="SloFastBurn"}',
        "truncatedAlerts": 0,
        "status": "firing",
        "receiver": "fleetscope",
        "groupLabels": {"alertname": "SloFastBurn"},
        "commonLabels": {},
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example",
        "alerts": [alert],
    }


@pytest.fixture
def scene(server: str, settings: Any, tmp_path: Path) -> Scene:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    settings.FLEETSCOPE_ALERTMANAGER_TOKEN = TOKEN
    # The runbooks come from a data migration; an earlier transactional test flushed them.
    runbooks_seed(Runbook)
    user_with_role("viewer", "viewer", password=PASSWORD)

    history = history_of("gpu-throttle", seed=0)
    path = tmp_path / "prod.om"
    history.write_openmetrics(path)
    fleet = history_import(fleet_slug="prod", path=path).fleet
    at, since = incident_window(history.manifest, history)
    started = at - since

    # Alertmanager's delivery, through the live server: it opens the incident.
    response = httpx.post(
        f"{server}/incidents/alertmanager/",
        content=json.dumps(alertmanager_payload(utc_iso(started))),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert response.json()["opened"] == 1
    incident = Incident.objects.get(pk=response.json()["alerts"][0]["incident"])
    assert (incident.fleet, incident.title, incident.started_at) == (fleet, TITLE, started)
    # The walk it queued reads "now", after commit in a thread: let it finish, so the walk
    # of the incident's window below is the newest and the one the page shows.
    wait_until(
        lambda: IncidentEvent.objects.filter(incident=incident, kind=EventKind.WALK).first(),
        timeout=120,
        what="the webhook's queued walk",
    )
    incident.refresh_from_db()  # the queued walk may have linked a runbook meanwhile
    walk = walk_fleet(fleet, at=at, since=since)
    assert LEAF in walk.supported, [(n.id, n.verdict, n.reason) for n in walk.nodes]
    record = incident_walk_record(incident, walk, author="viewer")
    leaf = next(n for n in record.walk["nodes"] if n["id"] == LEAF)
    assert leaf["figures"] and record.walk["canary"]
    assert leaf["runbook"] == runbook_slug(LEAF)
    runbook = Runbook.objects.get(slug=leaf["runbook"])
    # The incident's own runbook is the one its first supporting walk linked (here the
    # webhook's walk at "now", long after the history ends, may find the replicas gone).
    incident.refresh_from_db()
    assert incident.runbook is not None
    return Scene(
        url=server,
        incident_id=incident.pk,
        started=utc_text(started),
        window_start=utc_text_of_iso(record.walk["window"]["start"]),
        window_end=utc_text_of_iso(record.walk["window"]["end"]),
        figures=[figure_row(f) for f in leaf["figures"]],
        replicas=tuple(leaf["replicas"]),
        runbook=runbook.slug,
        runbook_title=runbook.title,
        incident_runbook_title=incident.runbook.title,
        canary=record.walk["canary"],
    )


def logged_in(browser: Browser, scene: Scene, path: str) -> Page:
    viewport: ViewportSize = {"width": 1400, "height": 1000}
    page = browser.new_context(viewport=viewport, timezone_id=TIMEZONE).new_page()
    page.goto(f"{scene.url}/login/?next={path}")
    page.fill("#id_username", "viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    return page


def no_sideways_overflow(page: Page) -> None:
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, overflow


def test_an_alertmanager_incident_reads_as_the_throttled_gpu_with_its_plan(scene: Scene) -> None:
    with chromium() as browser:
        page = logged_in(browser, scene, "/incidents/")
        assert page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == TIMEZONE
        row = page.locator(f"#incidents-unresolved tr[data-incident='{scene.incident_id}']")
        expect(row).to_contain_text(TITLE)
        expect(row).to_contain_text(scene.started)  # UTC, not New York's time
        page.screenshot(path=screenshot_path("triage-incident-list"), full_page=True)

        row.get_by_role("link", name=f"#{scene.incident_id} {TITLE}").click()
        expect(page).to_have_url(f"{scene.url}/incidents/{scene.incident_id}/")
        expect(page.locator("h1")).to_contain_text(TITLE)
        expect(page.locator("#incident-summary")).to_contain_text(scene.started)
        expect(page.locator("#walk")).to_contain_text(
            f"Window {scene.window_start} to {scene.window_end}"
        )
        expect(page.locator("main, body").first).to_contain_text("All times UTC")

        # The tree: the leaf is the supported cause, under supported parents, with figures.
        expect(page.locator("#supported")).to_contain_text(f"Cause found: {LEAF}")
        node = page.locator(f"#walk-tree li[data-node='{LEAF}']")
        expect(node).to_have_attribute("data-verdict", "supported")
        expect(node.locator(":scope > .verdict")).to_have_text("supported: cause found")
        for parent in ("tpot", "tpot.straggler"):
            expect(page.locator(f"#walk-tree li[data-node='{parent}']")).to_have_attribute(
                "data-verdict", "supported"
            )
        figures = node.locator(":scope > .scroll .figures-table tbody tr")
        expect(figures).to_have_count(len(scene.figures))
        for i, figure in enumerate(scene.figures):
            expect(figures.nth(i).locator("th")).to_have_text(figure["name"])
            expect(figures.nth(i)).to_contain_text(figure["value"])
        for replica in scene.replicas:
            expect(node.locator(":scope > .stands-out")).to_contain_text(replica)
        expect(node.locator(":scope a", has_text="runbook")).to_have_attribute(
            "href", f"/incidents/runbooks/{scene.runbook}/"
        )
        # Verdict colours: the cause stands out, ruled out is grey, insufficient amber.
        colours = page.evaluate(
            """() => Object.fromEntries(['supported', 'ruled_out', 'insufficient'].map(v => {
                const badge = document.querySelector(`li[data-verdict=${v}] > .verdict`);
                return [v, badge && getComputedStyle(badge).backgroundColor];
            }))"""
        )
        assert colours["supported"] not in (None, colours["ruled_out"], colours["insufficient"])

        # The canary plan: the promise that nothing is applied, the one change on the
        # throttled replica, the gates (the prober's among them), and
        # the plan as text and as YAML behind their disclosures.
        canary = page.locator("#canary")
        expect(canary).to_contain_text(NOTHING_APPLIED)
        summary = page.locator("#canary-summary")
        expect(summary.locator("dt", has_text="Leaf").locator("+ dd")).to_have_text(LEAF)
        variable = scene.canary["variable"]
        expect(summary).to_contain_text(
            f"{variable['name']}: {variable['current']} \u2192 {variable['proposed']}"
        )
        expect(summary).to_contain_text(f"at least {scene.canary['sample']['requests']} requests")
        expect(page.locator("#canary-gates li")).to_have_count(len(scene.canary["success_gates"]))
        # The fleet has a golden-set prober, so quality is a gate of its own, not unverified.
        expect(page.locator("#canary-gates li.unverified")).to_have_count(0)
        expect(page.locator("#canary-gates")).to_contain_text("The prober's quality signal")
        assert "{" not in summary.inner_text()  # no Python reprs of the plan's objects
        text, yaml = page.locator("#canary-text"), page.locator("#canary-yaml")
        expect(text).to_be_hidden()
        page.locator("#canary-text-details summary").click()
        expect(text).to_be_visible()
        expect(text).to_contain_text("FleetScope never applies this")
        assert text.inner_text().strip() == scene.canary["text"].strip()
        page.locator("#canary-yaml-details summary").click()
        expect(yaml).to_be_visible()
        assert yaml.inner_text().strip() == scene.canary["yaml"].strip()

        # The series behind the figures, frozen with the walk: the throttled replica's SM
        # clock among the lines, the axis in UTC although the browser is in New York.
        expect(page.locator("#charts [data-chart][data-drawn=true]").first).to_be_visible()
        assert trace_types_outside_the_bundle(page) == []
        clock = page.locator("[data-chart='chart-sm_clock']")
        names = clock.evaluate("plot => plot.data.map(trace => trace.name)")
        assert set(scene.replicas) <= set(names), names
        end = clock.evaluate("plot => plot.layout.xaxis.range[1]")
        shown = datetime.fromisoformat(str(end)[:19]).replace(tzinfo=UTC)
        window_end = datetime.strptime(scene.window_end, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
        assert abs((shown - window_end).total_seconds()) <= 120, (end, scene.window_end)
        page.locator("#charts").screenshot(path=screenshot_path("triage-incident-charts"))

        # What changed, the alert's labels, the timeline of both walks.
        expect(page.locator("#changes h2")).to_have_text("What changed")
        expect(page.locator("#alert-labels")).to_contain_text("fleetscope_fleet")
        expect(page.locator("#timeline li[data-kind=walk]")).to_have_count(2)
        expect(page.locator("#timeline")).to_contain_text(f"Walked the tree: {LEAF}")
        expect(page.locator("#runbook a")).to_have_text(scene.incident_runbook_title)
        no_sideways_overflow(page)
        page.screenshot(path=screenshot_path("triage-incident-detail"), full_page=True)

        # The Markdown evidence pack, fetched with the browser's session.
        link = page.get_by_role("link", name="evidence.md")
        expect(link).to_have_attribute("href", f"/incidents/{scene.incident_id}/evidence.md")
        evidence = page.request.get(f"{scene.url}/incidents/{scene.incident_id}/evidence.md")
        assert evidence.ok and evidence.headers["content-type"].startswith("text/markdown")
        markdown = evidence.text()
        assert LEAF in markdown and NOTHING_APPLIED in markdown
        assert scene.canary["yaml"].strip().splitlines()[0] in markdown
        assert scene.started in markdown

        # The runbook the walk linked.
        page.locator("#supported").get_by_role("link", name="runbook").click()
        expect(page).to_have_url(f"{scene.url}/incidents/runbooks/{scene.runbook}/")
        expect(page.locator("h1")).to_have_text(scene.runbook_title)
        expect(page.locator("body")).to_contain_text(f"leaf {LEAF}")
        expect(page.locator("#runbook-body")).to_contain_text("FleetScope never applies")
        no_sideways_overflow(page)
        page.screenshot(path=screenshot_path("triage-runbook"), full_page=True)
