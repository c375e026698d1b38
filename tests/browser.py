"""Headless Chromium (Debian's package) driven by Playwright, for the main UI flows: the
browser and the server come from devtools.browser (benchmarks/browser_overview.py uses them
too)."""

from __future__ import annotations

from pathlib import Path

from devtools.browser import CHROMIUM_ARGS, asgi_server, chromium

__all__ = ["CHROMIUM_ARGS", "SCREENSHOT_DIR", "asgi_server", "chromium", "screenshot_path"]

SCREENSHOT_DIR = Path(__file__).resolve().parents[1] / "var" / "screenshots"


def screenshot_path(name: str) -> Path:
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    return SCREENSHOT_DIR / f"{name}.png"
