"""One measured period of the load benchmark: the live job ticking every interval, the
page viewers and the websocket clients against the web process."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

import httpx

from benchmarks.loadrun.child import Child
from benchmarks.loadrun.measured import Period, Run, Tally
from benchmarks.loadrun.viewers import page_load, probe, viewer
from benchmarks.overview import query_count

WS_PATH = re.compile(r'data-ws-path="([^"]+)"')


@dataclass(frozen=True)
class Target:
    """What every run loads: the web process, the fleet, the sessions, Prometheus."""

    base: str  # the web process' URL
    slug: str
    cookies: list[str]  # one session per browser: viewers first, then sockets
    prometheus: str
    intervals: int  # live intervals measured
    think: float
    deflate: bool


async def sleep_until(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.monotonic()))


async def load_run(target: Target, viewers: int, sockets: int) -> Run:
    """One measured period with `viewers` page viewers and `sockets` websocket clients."""
    from django.conf import settings

    base, slug, cookies, think = target.base, target.slug, target.cookies, target.think
    prometheus, intervals = target.prometheus, target.intervals
    interval = float(settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS)
    page = f"/fleets/{slug}/"
    tally = Tally()
    period = Period()
    publisher, clients = Child("--publisher"), Child("--socket-clients")
    await publisher.start()
    await clients.start()
    try:
        # One load before anything is measured: it marks the fleet watched (the live job
        # computes watched fleets only) and finds the socket's path.
        async with httpx.AsyncClient(base_url=base, cookies={"sessionid": cookies[0]}) as warm:
            html = await warm.get(page)
            html.raise_for_status()
            found = WS_PATH.search(html.text)
            assert found is not None, "the overview page names no websocket"
            await page_load(warm, page, period, tally)
        await publisher.ask(slug)  # the default view cached, as after any interval
        setup = {
            "url": base.replace("http://", "ws://") + found.group(1),
            "origin": base,
            "cookies": cookies[viewers : viewers + sockets],
            "deflate": target.deflate,
        }
        await asyncio.wait_for(clients.ask(setup), 120)
        ticked = time.monotonic()
        period.start = ticked
        before = await asyncio.to_thread(query_count, prometheus)
        viewer_tasks = [
            asyncio.create_task(viewer(base, page, cookies[i], think, period, tally))
            for i in range(viewers)
        ]
        viewer_tasks.append(asyncio.create_task(probe(base, period, tally)))
        publishes = []
        for k in range(1, intervals + 1):
            await sleep_until(ticked + k * interval)
            publishes.append(await publisher.ask(slug))
        period.end = time.monotonic()
        await asyncio.sleep(0.3)  # Prometheus counts a request once it has answered it
        after = await asyncio.to_thread(query_count, prometheus)
        period.done.set()
        await asyncio.gather(*viewer_tasks)
        wanted = sorted({p["stamp"] for p in publishes if p["stamp"]})
        got = await clients.ask(wanted)
    finally:
        await publisher.stop()
        await clients.stop()
    tally.received = got["received"]
    tally.handshakes = got["handshakes"]
    tally.errors.update(got["errors"])
    return Run(
        viewers=viewers,
        sockets=sockets,
        seconds=period.end - period.start,
        intervals=intervals,
        tally=tally,
        requests=len(tally.html) + len(tally.json),
        queries_per_interval=(after - before) / intervals,
        pushes_per_interval=[len(set(r) & set(wanted)) / intervals for r in tally.received],
        publishes=publishes,
    )
