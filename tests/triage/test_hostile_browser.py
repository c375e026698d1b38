"""Hostile content renders inert, in headless Chromium against the real ASGI app: a runbook
whose Markdown and fields carry scripts, event handlers, `javascript:` links, a
right-to-left override and 10,000-character values, and an incident (title, owner, alert
labels and notes) carrying the same. Nothing runs, no handler or script link reaches the
page, the override is shown as a visible marker instead of reordering the text, and no
value pushes the page wider than the window.

Screenshots go to var/screenshots/ (tests.browser.SCREENSHOT_DIR).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Browser, Dialog, Page, ViewportSize, expect

from tests.browser import asgi_server, chromium, screenshot_path
from tests.triage.factories import a_fleet, an_incident
from tests.triage.test_browser import no_sideways_overflow
from triage.incidents import incident_note
from triage.models import Runbook

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume synchronous"),
]

PASSWORD = "hostile-viewer-password-1"
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "invoice\u202egpj.exe" reads "invoiceexe.jpg"
SPOOF = f"invoice{RLO}gpj.exe"
LONG = "W" * 10_000  # no space to break at
SCRIPT = "<script>alert('script')</script>"
HANDLER = "<img src=x onerror=\"alert('onerror')\">"
SVG = "<svg onload=alert('svg')>"
MARKDOWN_LINK = "[click me](javascript:alert('markdown'))"
RAW_LINK = "<a href=\"javascript:alert('raw')\">raw link</a>"

RUNBOOK_BODY = f"""# Heading {SCRIPT}

{HANDLER} and {SVG}

{MARKDOWN_LINK} and {RAW_LINK}

- a bullet with `code {HANDLER}` and **strong {SCRIPT}**
- the attachment {SPOOF}

## {LONG}

{LONG}

- `{LONG}`

```
{LONG}
{SCRIPT}
```
"""

NOTES = [SCRIPT, HANDLER, MARKDOWN_LINK, RAW_LINK, f"renamed {SPOOF}", LONG]


@dataclass(frozen=True)
class Scene:
    url: str
    runbook_path: str
    incident_path: str


@pytest.fixture
def scene() -> Iterator[Scene]:
    User.objects.create_superuser("hostile-viewer", password=PASSWORD)
    runbook = Runbook.objects.create(
        slug="hostile-runbook",
        title=f"KV cache {SCRIPT} {SPOOF} " + "T" * 120,
        owner_team=HANDLER,
        escalation=f"page {SPOOF}",
        body_markdown=RUNBOOK_BODY,
        # The admin's form refuses such a URL; a row written another way must not link it.
        external_url="javascript:alert('external')",
    )
    incident = an_incident(
        a_fleet("hostile"),
        title=f"{SCRIPT} {SPOOF} " + "I" * 250,
        owner=HANDLER,
        runbook=runbook,
        alert_labels={"alertname": SCRIPT, "instance": SPOOF, "long": LONG},
        alert_annotations={"summary": HANDLER, "description": LONG},
    )
    for text in NOTES:
        incident_note(incident=incident, author="hostile-viewer", text=text)
    with asgi_server() as url:
        yield Scene(url, f"/incidents/runbooks/{runbook.slug}/", f"/incidents/{incident.pk}/")


def logged_in(browser: Browser, scene: Scene, dialogs: list[str]) -> Page:
    viewport: ViewportSize = {"width": 1400, "height": 1000}
    page = browser.new_context(viewport=viewport).new_page()

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    page.goto(f"{scene.url}/login/")
    page.fill("#id_username", "hostile-viewer")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state("load")
    return page


def assert_inert(page: Page) -> None:
    handlers = page.evaluate(
        """() => [...document.querySelectorAll('*')].flatMap(el => [...el.attributes]
            .filter(a => a.name.toLowerCase().startsWith('on'))
            .map(a => `${el.tagName} ${a.name}`))"""
    )
    assert handlers == []
    script_links = page.evaluate(
        """() => [...document.querySelectorAll('[href], [src], [action], [formaction]')]
            .flatMap(el => ['href', 'src', 'action', 'formaction'].map(n => el.getAttribute(n)))
            .filter(v => v !== null && /^\\s*(javascript|data|vbscript):/i.test(v))"""
    )
    assert script_links == []
    scripts = page.evaluate(
        """() => [...document.scripts].filter(s =>
            !(s.getAttribute('src') || '').startsWith('/static/')
            && s.type !== 'application/json').map(s => s.outerHTML.slice(0, 80))"""
    )
    assert scripts == []
    assert page.locator("svg[onload], img[src='x']").count() == 0
    # The hostile markup is shown as text, neither run nor dropped.
    body = page.locator("main").inner_text()
    assert SCRIPT in body and HANDLER in body


def assert_override_neutralised(page: Page) -> None:
    text = page.evaluate("() => document.title + document.body.innerText")
    assert RLO not in text  # nowhere applied, not even in the tab's title
    markers = page.locator(".bidi-control")
    expect(markers.first).to_be_visible()
    expect(markers.first).to_have_text("U+202E")
    expect(markers.first).to_have_attribute("title", "RIGHT-TO-LEFT OVERRIDE, shown, not applied")
    # The spoofed name reads in its real order, the marker in its place.
    assert "invoiceU+202Egpj.exe" in text


def assert_fits(page: Page, scope: str = "body") -> None:
    """Nothing in `scope` sticks out of the window sideways (inside a box that scrolls
    them, as a code block does, is fine); named, innermost first, when something does."""
    sticking_out = page.evaluate(
        """scope => {
            const width = document.documentElement.clientWidth;
            const clipped = el => {
                for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
                    if (getComputedStyle(up).overflowX !== 'visible') return true;
                }
                return false;
            };
            const sticks = el => {
                const box = el.getBoundingClientRect();
                const spills = getComputedStyle(el).overflowX === 'visible'
                    && box.left + el.scrollWidth > width + 1;  // text wider than its box
                return box.right > width + 1 || spills;
            };
            const out = [...document.querySelectorAll(`${scope} *`)]
                .filter(el => sticks(el) && !clipped(el));
            return out.filter(el => !out.some(o => o !== el && el.contains(o))).slice(0, 5)
                .map(el => `${el.tagName}.${el.className} ${el.textContent.slice(0, 30)}`);
        }""",
        scope,
    )
    assert sticking_out == [], sticking_out
    if scope == "body":
        no_sideways_overflow(page)


def test_hostile_runbook_and_incident_render_inert(scene: Scene) -> None:
    dialogs: list[str] = []
    with chromium() as browser:
        page = logged_in(browser, scene, dialogs)

        page.goto(f"{scene.url}{scene.runbook_path}")
        expect(page.locator("#runbook-body")).to_contain_text("Heading <script>")
        expect(page.locator("#runbook-body")).to_contain_text(MARKDOWN_LINK)
        expect(page.get_by_text("javascript:alert('external')")).to_be_visible()
        assert_inert(page)
        assert_override_neutralised(page)
        assert_fits(page)
        page.screenshot(path=screenshot_path("triage-hostile-runbook"), full_page=True)
        page.screenshot(path=screenshot_path("triage-hostile-runbook-top"))  # readable size

        page.goto(f"{scene.url}{scene.incident_path}")
        expect(page.locator("#timeline li[data-kind=note]")).to_have_count(len(NOTES))
        expect(page.locator("#timeline")).to_contain_text(MARKDOWN_LINK)
        expect(page.locator("#alert-labels")).to_contain_text(SCRIPT)
        assert_inert(page)
        assert_override_neutralised(page)
        assert_fits(page)
        page.screenshot(path=screenshot_path("triage-hostile-incident"), full_page=True)
        page.screenshot(path=screenshot_path("triage-hostile-incident-top"))  # readable size

        page.goto(f"{scene.url}/incidents/")
        expect(page.locator("#incidents-unresolved")).to_contain_text(SCRIPT)
        assert_inert(page)
        assert_override_neutralised(page)
        assert_fits(page)

        # A phone's width, where a long unbroken value is hardest to fit. Only the content:
        # the navigation bar is wider than a phone on every page, hostile or not.
        page.set_viewport_size({"width": 390, "height": 844})
        for path in (scene.runbook_path, scene.incident_path):
            page.goto(f"{scene.url}{path}")
            assert_fits(page, "main")
    assert dialogs == []
