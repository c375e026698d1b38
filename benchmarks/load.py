"""Load: many overview viewers and websocket clients against one web process, with Prometheus.

    .venv/bin/python benchmarks/load.py [--viewers 50] [--sockets N] [--seconds 60] [--think 10]
        [--runs 1] [--replicas 32] [--quick] [--no-deflate] [--keep]
        [--database-url URL] [--redis-url URL]

Set-up, as production as this machine allows: PostgreSQL (a fresh `fleetscope_load`
database on 127.0.0.1 unless --database-url), Redis db 12 for the channel layer and the
shared cache, one web process (uvicorn serving fleetscope.asgi, as deploy/bin/web with
WEB_CONCURRENCY=1), and a real Prometheus holding a fleetsim fleet (`--replicas` vLLM
replicas with their DCGM exporters, the gateway and the prober) at 15 s from 70 minutes
before the start to past the end of the benchmark, backfilled by promtool, so every
default view (the last hour, ending now) has data. The fleet is registered in FleetScope
from a minute of the same fleet's history (its endpoints and inventories). The live job
(`dashboard.live.overviews_publish`, a Celery worker's task in production) runs in a
process of its own, every FLEETSCOPE_SCRAPE_INTERVAL_SECONDS (15 s), driven from here.

Load, through HTTP and websockets only, from this process:
- `--viewers` page viewers, each a browser of its own (its own session of a user with
  the viewer role, cookies, connection): the overview's HTML, then the JSON the page's
  script fetches (its `data-json-url`), then a pause of `--think` seconds (uniformly
  0.5-1.5x) before loading the page again; first loads spread over one pause.
- `--sockets` websocket clients (default: as many as viewers) on the overview's socket
  (`data-ws-path`), each with its own session, connected before the measured period, as
  the page keeps them (a "ping" every 60 s), offering permessage-deflate as browsers do
  (`--no-deflate`: without; the server declines it, as pushes come gzip-compressed once
  per publish, and the clients inflate every push as the page does); they run in a
  process of their own, so that inflating pushes does not hold up the viewers' timings.

Measured over whole live intervals (`--seconds` rounded to intervals): requests/s, p50/p99
of page loads (HTML + JSON) and of each request, websocket handshakes, errors (non-2xx,
exceptions, websocket closes or failed handshakes), the pushes each client got of the
interval's published overview, Prometheus queries per interval, from Prometheus' own
counters (`prometheus_http_requests_total`, handlers /api/v1/query*), and /healthz probed
every 0.1 s (how long the event loop was held up). A run with one viewer and one socket
comes first, as the baseline. Medians over `--runs` pairs.

Goal: no errors, p99 page load < 500 ms with 50 viewers on 2 cores, and as many
Prometheus queries per interval with 50 viewers as with one (1.0x).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.overview import (  # noqa: E402
    asgi_server,
    prometheus_on,
    query_count,
    setup_django,
    viewer_sessions,
)
from benchmarks.overview_fill import STEP_SECONDS, fill, log  # noqa: E402

GOAL_P99_SECONDS = 0.5
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/fleetscope_load"
DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
PAST_SECONDS = 70 * 60  # the default view (1 h) and the rate windows before it
PING_SECONDS = 60.0  # static/js/fleet_overview/live_updates.js
PUSH_GRACE_SECONDS = 10.0  # how long after the last publish a push may still arrive
PROBE_SECONDS = 0.1


# --- The live job, in a process of its own (as a Celery worker runs it) ---------------


def publisher() -> None:
    """Reads one line per tick on stdin, runs overviews_publish() and answers one JSON line:
    how many views it published, in how long, and the stamp of the default view's pushed
    text (what every client of the fleet should receive next)."""
    import django

    django.setup()
    from dashboard.live import latest_overview_gzip, overviews_publish
    from fleetscope.lib import gzipped
    from inventory.access import ViewScope
    from inventory.models import Fleet

    for line in sys.stdin:
        fleet = Fleet.objects.get(slug=json.loads(line))
        started = time.perf_counter()
        published = overviews_publish()
        seconds = time.perf_counter() - started
        data = latest_overview_gzip(ViewScope(fleet))
        text = "" if data is None else gzipped.decompress(data)
        payload = json.loads(text) if text else {}
        panels = payload.get("panels", [])
        answer = {
            "published": published,
            "seconds": seconds,
            "stamp": push_stamp(text),
            "bytes": len(text.encode()),
            "gzip_bytes": 0 if data is None else len(data),
            "drawn": sum(p["status"] in ("ok", "partial") for p in panels),
            "panels": len(panels),
        }
        print(json.dumps(answer), flush=True)


STAMP = '"pushed_at":"'


def push_stamp(text: str) -> str | None:
    """Which push `text` is: its `live.pushed_at` (the publish's second; publishes are an
    interval apart), found from the end, where the live job puts it, without parsing
    megabytes of JSON."""
    at = text.rfind(STAMP)
    return None if at < 0 else text[at + len(STAMP) : at + len(STAMP) + 20]


class Child:
    """A helper process of this script (`--publisher`, `--socket-clients`), spoken to in
    JSON lines over its stdin and stdout."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, __file__, self.mode, cwd=ROOT, env=os.environ.copy(),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**24,
        )  # fmt: skip

    async def ask(self, message: Any) -> Any:
        assert self.proc is not None and self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.mode} process exited")
        return json.loads(line)

    async def stop(self) -> None:
        if self.proc is not None and self.proc.stdin:
            self.proc.stdin.close()
            await self.proc.wait()


# --- Set-up ------------------------------------------------------------------------------


def fresh_database(url: str) -> None:
    """Drop and create the benchmark's own PostgreSQL database (the default URL only)."""
    import psycopg
    from psycopg import sql

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def flush_redis(url: str) -> None:
    """The benchmark's own Redis database starts empty (the default URL only)."""
    import redis

    redis.Redis.from_url(url).flushdb()


def prometheus_history(replicas: int, path: Path, future_seconds: float) -> None:
    """The fleet's history as OpenMetrics, from PAST_SECONDS ago to `future_seconds` ahead:
    promtool backfills it, and every view until then ends inside it."""
    from fleetsim.history import History

    started = time.perf_counter()
    hours = (PAST_SECONDS + future_seconds) / 3600
    history = History(
        replicas=replicas, hours=hours, step=STEP_SECONDS, end=time.time() + future_seconds
    )
    history.write_openmetrics(path)
    log(
        f"Prometheus history: {len(history.targets)} targets x {history.steps + 1} steps "
        f"written in {time.perf_counter() - started:.0f} s ({path.stat().st_size / 1e9:.2f} GB)"
    )


# --- Load ---------------------------------------------------------------------------------


@dataclass
class Period:
    """The measured period: requests started inside it count."""

    start: float = float("inf")
    end: float = float("inf")
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def inside(self, moment: float) -> bool:
        return self.start <= moment < self.end


@dataclass
class Tally:
    loads: list[float] = field(default_factory=list)  # HTML + JSON, seconds
    html: list[float] = field(default_factory=list)
    json: list[float] = field(default_factory=list)
    handshakes: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    received: list[list[str]] = field(default_factory=list)  # per socket: push stamps
    probes: list[float] = field(default_factory=list)  # /healthz, every PROBE_SECONDS


JSON_URL = re.compile(r'data-json-url="([^"]+)"')
WS_PATH = re.compile(r'data-ws-path="([^"]+)"')


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


def socket_clients() -> None:
    """The websocket clients, in a process of their own so that their work (inflating
    every push) does not hold up the page viewers' event loop. Reads the set-up (URL,
    origin, cookies) as one JSON line and answers when every client is connected; then
    reads the stamps of the measured period's pushes, waits for them (at most
    PUSH_GRACE_SECONDS), closes, and answers what each client received and the errors."""
    asyncio.run(_socket_clients())


@dataclass
class Sockets:
    """What every websocket client of the process shares."""

    url: str
    origin: str
    deflate: bool  # offer permessage-deflate, as browsers do
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    handshakes: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


async def _socket_clients() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    setup = json.loads(await reader.readline())
    shared = Sockets(setup["url"], setup["origin"], setup["deflate"])
    cookies: list[str] = setup["cookies"]
    received: list[set[str]] = [set() for _ in cookies]
    connected = [asyncio.Event() for _ in cookies]
    tasks = [
        asyncio.create_task(socket_client(shared, cookie, received[i], connected[i]))
        for i, cookie in enumerate(cookies)
    ]
    await asyncio.gather(*(c.wait() for c in connected))
    say({"connected": len(shared.handshakes)})
    wanted = set(json.loads(await reader.readline()))
    deadline = time.monotonic() + PUSH_GRACE_SECONDS
    while time.monotonic() < deadline and any(not wanted <= r for r in received):
        await asyncio.sleep(0.1)
    shared.closing.set()
    await asyncio.gather(*tasks)
    say({"received": [sorted(r) for r in received], "handshakes": shared.handshakes,
         "errors": dict(shared.errors)})  # fmt: skip


def say(message: Any) -> None:
    print(json.dumps(message), flush=True)


async def socket_client(
    shared: Sockets, cookie: str, received: set[str], connected: asyncio.Event
) -> None:
    """One page's socket: a ping every PING_SECONDS, the stamp of every push kept in
    `received`; a close before `shared.closing` is an error."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake
    from websockets.typing import Origin

    started = time.monotonic()
    try:
        ws = await connect(
            shared.url, origin=Origin(shared.origin), max_size=None, proxy=None,
            additional_headers={"Cookie": f"sessionid={cookie}"}, open_timeout=30,
            compression="deflate" if shared.deflate else None,
        )  # fmt: skip
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        shared.errors[f"websocket handshake {type(exc).__name__}"] += 1
        connected.set()
        return
    shared.handshakes.append(time.monotonic() - started)
    connected.set()

    async def ping() -> None:
        await asyncio.sleep(random.uniform(0, PING_SECONDS))
        while True:
            await ws.send("ping")
            await asyncio.sleep(PING_SECONDS)

    async def listen() -> None:
        async for message in ws:
            text = message if isinstance(message, str) else gzip.decompress(message).decode()
            if (stamp := push_stamp(text)) is not None:
                received.add(stamp)

    tasks = [asyncio.create_task(ping()), asyncio.create_task(listen())]
    stop = asyncio.create_task(shared.closing.wait())
    await asyncio.wait([*tasks, stop], return_when=asyncio.FIRST_COMPLETED)
    if not shared.closing.is_set():
        shared.errors[f"websocket closed {ws.close_code}"] += 1
    for task in (*tasks, stop):
        task.cancel()
    await asyncio.gather(*tasks, stop, return_exceptions=True)
    with suppress(ConnectionClosed):
        await ws.close()  # the page closed, as a browser says so


@dataclass
class Run:
    viewers: int
    sockets: int
    seconds: float  # the measured period
    intervals: int
    tally: Tally
    requests: int
    queries_per_interval: float
    pushes_per_interval: list[float]  # per socket
    publishes: list[dict[str, Any]]


async def sleep_until(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.monotonic()))


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


# --- Report -------------------------------------------------------------------------------


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


@dataclass
class Figures:
    """One run's printed figures."""

    requests_per_second: float
    loads: int
    load_p50: float
    load_p99: float
    html_p50: float
    html_p99: float
    json_p50: float
    json_p99: float
    handshake_p50: float
    handshake_p99: float
    probe_p50: float
    probe_max: float
    errors: int
    pushes: float  # per client per interval, the lowest client's
    queries: float
    publish_seconds: float


def figures(run: Run) -> Figures:
    t = run.tally
    return Figures(
        requests_per_second=run.requests / run.seconds,
        loads=len(t.loads),
        load_p50=ms(t.loads, 50),
        load_p99=ms(t.loads, 99),
        html_p50=ms(t.html, 50),
        html_p99=ms(t.html, 99),
        json_p50=ms(t.json, 50),
        json_p99=ms(t.json, 99),
        handshake_p50=ms(t.handshakes, 50),
        handshake_p99=ms(t.handshakes, 99),
        probe_p50=ms(t.probes, 50),
        probe_max=ms(t.probes, 100),
        errors=sum(t.errors.values()),
        pushes=min(run.pushes_per_interval, default=float("nan")),
        queries=run.queries_per_interval,
        publish_seconds=statistics.median(p["seconds"] for p in run.publishes),
    )


def median_figures(runs: list[Run]) -> Figures:
    each = [figures(r) for r in runs]
    return Figures(**{
        name: statistics.median(getattr(f, name) for f in each)
        for name in Figures.__dataclass_fields__
    })  # fmt: skip


def report(one: list[Run], many: list[Run], think: float) -> None:
    a, b = median_figures(one), median_figures(many)
    n = many[0]
    last = n.publishes[-1]
    print(
        f"\n{len(one)} run(s) each; {n.intervals} live intervals measured per run "
        f"({n.seconds:.0f} s); think time {think:g} s (0.5-1.5x); pushed overview "
        f"{last['bytes'] / 1e6:.2f} MB ({last['gzip_bytes'] / 1e6:.2f} MB gzip), "
        f"{last['drawn']}/{last['panels']} panels drawn"
    )
    rows = [
        ("viewers / websocket clients", f"{one[0].viewers} / {one[0].sockets}",
         f"{n.viewers} / {n.sockets}"),
        ("page loads measured", f"{a.loads:.0f}", f"{b.loads:.0f}"),
        ("requests/s (HTML + JSON)", f"{a.requests_per_second:.1f}",
         f"{b.requests_per_second:.1f}"),
        ("page load p50 / p99, ms", f"{a.load_p50:.0f} / {a.load_p99:.0f}",
         f"{b.load_p50:.0f} / {b.load_p99:.0f}"),
        ("  HTML p50 / p99, ms", f"{a.html_p50:.0f} / {a.html_p99:.0f}",
         f"{b.html_p50:.0f} / {b.html_p99:.0f}"),
        ("  overview.json p50 / p99, ms", f"{a.json_p50:.0f} / {a.json_p99:.0f}",
         f"{b.json_p50:.0f} / {b.json_p99:.0f}"),
        ("websocket handshake p50 / p99, ms", f"{a.handshake_p50:.0f} / {a.handshake_p99:.0f}",
         f"{b.handshake_p50:.0f} / {b.handshake_p99:.0f}"),
        ("/healthz every 0.1 s: p50 / max, ms", f"{a.probe_p50:.0f} / {a.probe_max:.0f}",
         f"{b.probe_p50:.0f} / {b.probe_max:.0f}"),
        ("errors", f"{a.errors:.0f}", f"{b.errors:.0f}"),
        ("pushes per client per interval (lowest)", f"{a.pushes:.2f}", f"{b.pushes:.2f}"),
        ("live computation (publisher), s", f"{a.publish_seconds:.2f}",
         f"{b.publish_seconds:.2f}"),
        ("Prometheus queries per interval", f"{a.queries:.1f}", f"{b.queries:.1f}"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'1 viewer':>14}  {f'{n.viewers} viewers':>14}")
    for label, x, y in rows:
        print(f"{label:{width}}  {x:>14}  {y:>14}")
    for runs in (one, many):
        errors = sum((r.tally.errors for r in runs), Counter[str]())
        if errors:
            listed = ", ".join(f"{count} x {kind}" for kind, count in errors.most_common())
            print(f"errors with {runs[0].viewers} viewer(s), all runs: {listed}")
    ratio = b.queries / a.queries if a.queries else float("nan")
    p99_met = b.load_p99 < GOAL_P99_SECONDS * 1000
    print(
        f"Prometheus queries per interval, {n.viewers} viewers / 1: {ratio:.2f}x "
        f"(goal 1.0x: {'met' if abs(ratio - 1) < 0.005 else 'NOT met'}); "
        f"p99 page load {b.load_p99:.0f} ms (goal < {GOAL_P99_SECONDS * 1000:.0f} ms: "
        f"{'met' if p99_met else 'NOT met'}); errors {b.errors:.0f} "
        f"(goal 0: {'met' if b.errors == 0 else 'NOT met'}); every client got every push: "
        f"{'yes' if b.pushes == 1 else 'NO'}"
    )


# --- Main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, help="page viewers (default 50; --quick 10)")
    parser.add_argument("--sockets", type=int, help="websocket clients (default: --viewers)")
    parser.add_argument("--seconds", type=float, help="measured period, rounded to live "
                        "intervals (default 60; --quick 30)")  # fmt: skip
    parser.add_argument("--think", type=float, default=10.0,
                        help="seconds between a viewer's page loads (x 0.5-1.5)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=1, help="1-viewer / N-viewer pairs")
    parser.add_argument("--replicas", type=int, help="vLLM replicas (default 32; --quick 8)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 10 viewers, 30 s, "
                        "8 replicas")  # fmt: skip
    parser.add_argument("--database-url", help=f"PostgreSQL (default: {DEFAULT_DATABASE}, "
                        "dropped and created afresh)")  # fmt: skip
    parser.add_argument("--redis-url", help=f"channel layer and cache (default: {DEFAULT_REDIS}, "
                        "flushed first)")  # fmt: skip
    parser.add_argument("--no-deflate", action="store_true", help="websocket clients without "
                        "permessage-deflate (browsers offer it)")  # fmt: skip
    parser.add_argument("--keep", action="store_true",
                        help="keep the work directory (server and Prometheus logs)")  # fmt: skip
    parser.add_argument("--publisher", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--socket-clients", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.publisher:
        publisher()
        return
    if args.socket_clients:
        socket_clients()
        return
    viewers = args.viewers or (10 if args.quick else 50)
    sockets = viewers if args.sockets is None else args.sockets
    seconds = args.seconds or (30.0 if args.quick else 60.0)
    replicas = args.replicas or (8 if args.quick else 32)
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        raise SystemExit("needs the Debian package prometheus (prometheus and promtool)")
    database_url = args.database_url or DEFAULT_DATABASE
    redis_url = args.redis_url or DEFAULT_REDIS
    if args.database_url is None:
        fresh_database(database_url)
    if args.redis_url is None:
        flush_redis(redis_url)
    workdir = Path(tempfile.mkdtemp(prefix="fleetscope-bench-load-"))
    (workdir / "var").mkdir()
    os.environ["WEB_CONCURRENCY"] = "1"  # uvicorn's default --workers (deploy/bin/web: 2)
    os.environ.pop("PROMETHEUS_URL", None)
    setup_django(workdir / "var", database_url, redis_url)
    from django.conf import settings

    interval = float(settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS)
    intervals = max(1, round(seconds / interval))
    # Set-up after the history is written, then each run: warm-up, the period, draining.
    future = 240 + args.runs * 2 * (intervals * interval + 90)
    try:
        fleet, _ = fill(replicas, 1 / 60, None)  # registered, with inventories
        openmetrics = workdir / "history.om"
        prometheus_history(replicas, openmetrics, future)
        cookies = viewer_sessions(viewers + sockets)  # a session per browser
        with prometheus_on(openmetrics, workdir) as prometheus:
            # The web process and the live job read Prometheus; this process only counts.
            os.environ["PROMETHEUS_URL"] = prometheus
            with asgi_server() as port:
                target = Target(f"http://127.0.0.1:{port}", fleet.slug, cookies, prometheus,
                                intervals, args.think, not args.no_deflate)  # fmt: skip
                one: list[Run] = []
                many: list[Run] = []
                for i in range(args.runs):
                    for size, runs in ((1, one), (viewers, many)):
                        clients = min(1, sockets) if size == 1 else sockets
                        log(f"run {i + 1}/{args.runs}: {size} viewer(s), {clients} socket(s)")
                        run = asyncio.run(load_run(target, size, clients))
                        runs.append(run)
                        f = figures(run)
                        log(f"  p50/p99 {f.load_p50:.0f}/{f.load_p99:.0f} ms, "
                            f"{f.requests_per_second:.1f} req/s, {f.errors} errors, "
                            f"{f.queries:.1f} queries/interval")  # fmt: skip
        database = settings.DATABASES["default"]
        print(
            f"fleet: {replicas} replicas (+ DCGM, gateway, prober) in Prometheus at "
            f"{STEP_SECONDS:g} s; one uvicorn process; database "
            f"{database['ENGINE'].rsplit('.', 1)[-1]} (CONN_MAX_AGE {database['CONN_MAX_AGE']}); "
            f"Redis channel layer and cache; live interval {interval:g} s; websocket clients "
            f"{'without' if args.no_deflate else 'offering'} permessage-deflate"
        )
        report(one, many, args.think)
    finally:
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
