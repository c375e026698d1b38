"""The page viewers, each a browser loading the overview and its JSON, and the /healthz
probe beside them."""

from __future__ import annotations

import asyncio
import random
import re
import time
from contextlib import suppress

import httpx

from benchmarks.loadrun.measured import Period, Tally

PROBE_SECONDS = 0.1
JSON_URL = re.compile(r'data-json-url="([^"]+)"')


async def page_load(client: httpx.AsyncClient, page: str, period: Period, tally: Tally) -> None:
    """The overview as the browser loads it: the HTML, then its JSON."""
    started = time.monotonic()
    counted = period.inside(started)

    def error(kind: str) -> None:
        if counted:
            tally.errors[kind] += 1

    try:
        html = await client.get(page)
        html_seconds = time.monotonic() - started
        if html.status_code != 200:
            return error(f"page HTTP {html.status_code}")
        found = JSON_URL.search(html.text)
        if found is None:
            return error("page without data-json-url")
        if counted:
            tally.html.append(html_seconds)
        json_started = time.monotonic()
        answer = await client.get(found.group(1), headers={"Accept": "application/json"})
        json_seconds = time.monotonic() - json_started
        if answer.status_code != 200:
            return error(f"overview.json HTTP {answer.status_code}")
        if answer.headers.get("content-type", "").split(";")[0] != "application/json":
            return error("overview.json not JSON")
    except httpx.HTTPError as exc:
        return error(f"HTTP {type(exc).__name__}")
    if counted:
        tally.json.append(json_seconds)
        tally.loads.append(time.monotonic() - started)


async def viewer(base: str, page: str, cookie: str, think: float, period: Period,
                 tally: Tally) -> None:  # fmt: skip
    async with httpx.AsyncClient(
        base_url=base, cookies={"sessionid": cookie}, timeout=30, follow_redirects=False
    ) as client:
        pause = random.uniform(0, think)  # arrivals spread over one pause
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(period.done.wait(), pause)
            if period.done.is_set():
                return
            await page_load(client, page, period, tally)
            pause = think * random.uniform(0.5, 1.5)


async def probe(base: str, period: Period, tally: Tally) -> None:
    """/healthz (no database, no cache) every PROBE_SECONDS: how long the web process'
    event loop was held up, whatever request met it."""
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        while not period.done.is_set():
            started = time.monotonic()
            with suppress(httpx.HTTPError):
                await client.get("/healthz")
                tally.probes.append(time.monotonic() - started)
            await asyncio.sleep(PROBE_SECONDS)
