"""Headless Chromium (Debian's package) driven by Playwright, for the main UI flows: the
browser and the server come from devtools.browser (benchmarks/browser_overview.py uses them
too)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from devtools.browser import CHROMIUM_ARGS, asgi_server, chromium

__all__ = [
    "CHROMIUM_ARGS",
    "SCREENSHOT_DIR",
    "asgi_server",
    "chromium",
    "screenshot_path",
    "trace_types_outside_the_bundle",
]

SCREENSHOT_DIR = Path(__file__).resolve().parents[1] / "var" / "screenshots"


def screenshot_path(name: str) -> Path:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR / f"{name}.png"


# Every chart on the page, by trace type, that the served plotly.js bundle does not know
# (it would draw nothing for it): the cartesian bundle has scatter, bar and heatmap.
UNKNOWN_TRACE_TYPES = """() => {
  const known = new Set(Object.keys(Plotly.PlotSchema.get().traces));
  return [...document.querySelectorAll(".js-plotly-plot")]
    .flatMap(plot => plot.data.map(trace => trace.type || "scatter"))
    .filter(type => !known.has(type));
}"""


def trace_types_outside_the_bundle(page: Page) -> list[str]:
    drawn = page.locator(".js-plotly-plot").count()
    assert drawn > 0, "no chart drawn yet"
    unknown: list[str] = page.evaluate(UNKNOWN_TRACE_TYPES)
    return unknown
