"""Headless Chromium (Debian's package) driven by Playwright, and the real ASGI app under
uvicorn in a thread: for the browser tests and benchmarks/browser_overview.py."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from playwright.sync_api import Browser, sync_playwright

from devtools.ports import free_port
from devtools.waiting import wait_until

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def chromium() -> Iterator[Browser]:
    executable = shutil.which("chromium")
    if executable is None:
        raise AssertionError("chromium is not installed: run `make test`, which installs it")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def asgi_server() -> Iterator[str]:
    """The real ASGI app under uvicorn in a thread of this process (so it sees the test
    database); yields its base URL. Needs Django set up."""
    from django.db import connections

    from fleetscope.asgi import application

    port = free_port()
    config = uvicorn.Config(
        application, host="127.0.0.1", port=port, lifespan="off", log_level="warning"
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    wait_until(lambda: running.started or None, what="uvicorn to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        running.should_exit = True
        thread.join(10)
        connections.close_all()
