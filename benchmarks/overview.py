"""Fleet overview: render time and Prometheus load, each against a baseline, in one run.

    .venv/bin/python benchmarks/overview.py [--replicas 32] [--hours 6] [--renders 15]
        [--database-url postgres://...] [--redis-url redis://127.0.0.1:6379/14]

One fleetsim history (simulated time, 15 s steps) is written as OpenMetrics and
loaded twice: into the embedded store by `import_history` (the live record path,
`inventory.services.cycle_record`, one transaction per cycle; each new layout and
its inventory from a strict parse) and into Prometheus by
`promtool tsdb create-blocks-from openmetrics`. Overviews show
the default view (last hour, 15 s step) at the end of the history.

a. Local backend: overview_compute + overview_json, in a process set up as the
   server's (startup heap frozen), each render's window one step after the last,
   as the live overview moves (so the process caches meet one new frame per
   endpoint, as every interval does); the first, cold render is printed apart.
   Baseline: the plain path, where every spec reads the store itself and every
   frame is fetched and decompressed again. Goal: p95 < 300 ms.
b. Prometheus backend on the backfilled blocks against the same range queries (as
   the outbound client's request hook sees them) sent with plain httpx from a pool of
   the same width.
   Goal: <= 1.3x.
c. Live push through the ASGI app (uvicorn process, Redis channel layer):
   Prometheus queries per `overviews_publish()` with 1 and 50 websocket
   viewers, from Prometheus' own counters. Goal: the same number.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal
from unittest import mock
from urllib.parse import parse_qsl, urlsplit

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# benchmarks/fleetsim.py would shadow the fleetsim package when run from this folder.
sys.path.insert(0, str(ROOT))

from benchmarks.overview_fill import STEP_SECONDS, fill, log  # noqa: E402

VIEW = timedelta(hours=1)  # dashboard.timerange.DEFAULT_RANGE
GOAL_P95_SECONDS = 0.3
GOAL_PROMETHEUS_RATIO = 1.3
VIEWERS = 50
INTERVALS = 3


def setup_django(var_dir: Path, database_url: str | None, redis_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleetscope.settings"
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ["FLEETSCOPE_VAR_DIR"] = str(var_dir)  # the throwaway SQLite database
    os.environ["FLEETSCOPE_STORE_RETENTION_HOURS"] = "48"
    # The simulated targets are on loopback; nothing here scrapes them, but registration checks.
    os.environ["FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK"] = "true"
    for name, value in (("DATABASE_URL", database_url), ("REDIS_URL", redis_url)):
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def render(
    fleet: Any, window: Any, backend: Literal["local", "prometheus"]
) -> tuple[float, float, dict[str, Any]]:
    """One overview_compute + overview_json: total seconds, seconds in the panels'
    run_queries (the part the shared read serves), and the payload."""
    from dashboard import overview

    inner: list[float] = []
    run_queries = overview.run_queries

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return run_queries(*args, **kwargs)
        finally:
            inner.append(time.perf_counter() - started)

    started = time.perf_counter()
    with mock.patch.object(overview, "run_queries", timed):
        payload = overview.overview_compute(overview.OverviewRequest(fleet, window, backend))
        overview.overview_json(payload)
    return time.perf_counter() - started, sum(inner), payload


class _NoSharedReads:
    """Stands in for StoreWindow in run_queries: no shared window, so every spec reads the
    store itself (the path before reads were shared)."""

    @staticmethod
    def covering(needs: Any) -> None:
        return None


@contextmanager
def plain_reads() -> Iterator[None]:
    """The baseline's store path: every spec reads the store itself, and every frame is
    fetched and decompressed again (the process caches bypassed, not emptied)."""
    with (
        mock.patch("queries.run.StoreWindow", _NoSharedReads),
        mock.patch("inventory.store.reads._frame_cache_limit", lambda: 0),
    ):
        yield


def summary(times: list[float]) -> str:
    p95 = float(np.percentile(times, 95))
    return f"p50 {statistics.median(times) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"


# Stamped with the wall clock at render time, so they differ between any two renders.
CLOCK_FIELDS = frozenset({"computed_seconds", "last_good_at"})


def comparable(payload: Any) -> Any:
    if isinstance(payload, dict):
        return {k: comparable(v) for k, v in payload.items() if k not in CLOCK_FIELDS}
    if isinstance(payload, list):
        return [comparable(v) for v in payload]
    return payload


def bench_local(fleet: Any, windows: list[Any], renders: int, baseline_renders: int) -> None:
    """Renders as the live overview makes them: each window ends one step after the last
    (so each render meets one new frame per endpoint, as every interval does), in a
    process set up as the server's (fleetscope.asgi freezes the startup heap)."""
    from fleetscope.lib.heap import freeze_startup_heap

    freeze_startup_heap()
    cold, _, _ = render(fleet, windows[0], "local")  # imports, catalog, store caches
    ours, ours_panels, base, base_panels, same = [], [], [], [], True
    payloads = []
    # FleetScope's renders first, as a server makes them one interval after another: the
    # baseline's reads would fill the process caches (block indexes) with its own entries.
    for window in windows[1 : 1 + renders]:
        seconds, panel_seconds, shared = render(fleet, window, "local")
        ours.append(seconds)
        ours_panels.append(panel_seconds)
        payloads.append(shared)
    for window, shared in zip(windows[1 : 1 + baseline_renders], payloads, strict=False):
        with plain_reads():
            seconds, panel_seconds, alone = render(fleet, window, "local")
        base.append(seconds)
        base_panels.append(panel_seconds)
        same = same and comparable(shared) == comparable(alone)
    panels = payloads[-1]["panels"]
    drawn = sum(p["status"] in ("ok", "partial") for p in panels)
    print(f"\na. local backend, overview of the last hour ({drawn}/{len(panels)} panels drawn); "
          f"{renders} renders, each window one step on, baseline {len(base)}")  # fmt: skip
    print(f"   fleetscope, whole render:       {summary(ours)}   "
          f"(goal p95 < {GOAL_P95_SECONDS * 1000:.0f} ms)")  # fmt: skip
    print(f"   fleetscope, first render after start (cold caches): {cold * 1000:.0f} ms")
    print(f"   baseline, whole render:         {summary(base)}   "
          "(every spec reads and decodes the store)")  # fmt: skip
    print(f"   fleetscope, panel run_queries:  {summary(ours_panels)}   (one shared store read)")
    print(f"   baseline, panel run_queries:    {summary(base_panels)}")
    print(f"   speed-up: whole render {statistics.median(base) / statistics.median(ours):.1f}x, "
          f"panel queries {statistics.median(base_panels) / statistics.median(ours_panels):.1f}x "
          f"(p50); payloads identical: {'yes' if same else 'NO'}")  # fmt: skip


@contextmanager
def prometheus_on(openmetrics: Path, workdir: Path) -> Iterator[str]:
    """The history backfilled with promtool, served by a real Prometheus (the test suite's
    runner: Debian's package on a free loopback port)."""
    from devtools.prometheus import running_prometheus

    started = time.perf_counter()
    data = workdir / "data"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(data)],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    log(f"promtool backfill: {time.perf_counter() - started:.0f} s")
    openmetrics.unlink()
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    # Six hours of blocks load before Prometheus says ready: more than a test's 30 s.
    with running_prometheus(config, data, "--storage.tsdb.retention.time=30d", timeout=120) as url:
        yield url


def query_count(prometheus: str) -> float:
    """Queries Prometheus has answered, from its own metrics (reading them is no query).

    A plain line match: Prometheus' Go metrics (go_memstats_alloc_bytes next to
    go_memstats_alloc_bytes_total) are more than the strict parser accepts.
    """
    text = httpx.get(f"{prometheus}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("prometheus_http_requests_total{")
        and re.search(r'handler="/api/v1/query[^"]*"', line)
    )


def recorded_queries(fleet: Any, window: Any) -> list[list[tuple[str, dict[str, str]]]]:
    """The queries an overview sends, as the outbound client's request hook sees them:
    each (API path, parameters), range queries with their own window (the replica table
    asks for one point) and the instant `up` query, grouped per run_queries call, since
    each call goes out as one parallel batch."""
    from dashboard import overview
    from inventory.scraping import REQUEST_OBSERVERS

    run_queries = overview.run_queries
    groups: list[list[tuple[str, dict[str, str]]]] = []

    def recording(method: str, url: str) -> None:
        parts = urlsplit(url)
        for path, keys in QUERY_APIS.items():
            if parts.path.endswith(path):
                sent = dict(parse_qsl(parts.query))
                groups[-1].append((path, {key: sent[key] for key in keys}))

    def batch(*args: Any, **kwargs: Any) -> Any:
        groups.append([])
        return run_queries(*args, **kwargs)

    REQUEST_OBSERVERS.append(recording)
    try:
        with mock.patch.object(overview, "run_queries", batch):
            render(fleet, window, "prometheus")
    finally:
        REQUEST_OBSERVERS.remove(recording)
    return [group for group in groups if group]


QUERY_APIS = {
    "/api/v1/query_range": ("query", "start", "end", "step"),
    "/api/v1/query": ("query", "time"),
}


def plain_httpx(
    prometheus: str, groups: list[list[tuple[str, dict[str, str]]]], workers: int
) -> float:
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:

        def one(query: tuple[str, dict[str, str]]) -> None:
            path, params = query
            answer = client.get(f"{prometheus}{path}", params=params)
            assert answer.json()["status"] == "success"

        for group in groups:
            with ThreadPoolExecutor(max_workers=min(workers, len(group))) as pool:
                list(pool.map(one, group))
    return time.perf_counter() - started


def bench_prometheus(prometheus: str, fleet: Any, window: Any, renders: int) -> None:
    from queries import MAX_PARALLEL_QUERIES

    groups = recorded_queries(fleet, window)
    count = sum(len(g) for g in groups)
    ours, base = [], []
    for _ in range(renders):
        seconds, _, payload = render(fleet, window, "prometheus")
        ours.append(seconds)
        base.append(plain_httpx(prometheus, groups, MAX_PARALLEL_QUERIES))
    drawn = sum(p["status"] in ("ok", "partial") for p in payload["panels"])
    ratio = statistics.median(ours) / statistics.median(base)
    print(f"\nb. prometheus backend, same overview ({drawn}/{len(payload['panels'])} panels "
          f"drawn), {count} queries in {len(groups)} batch(es) of up to "
          f"{MAX_PARALLEL_QUERIES} in parallel, {renders} renders each")  # fmt: skip
    print(f"   fleetscope overview_compute + overview_json: {summary(ours)}")
    print(f"   baseline (same PromQL, plain httpx, same pool width): {summary(base)}")
    print(f"   ratio: {ratio:.2f}x (p50)   (goal <= {GOAL_PROMETHEUS_RATIO}x)")


@contextmanager
def asgi_server() -> Iterator[int]:
    """The web process on its own, as deployed: uvicorn serving fleetscope.asgi. In this
    process its event loop would share the GIL with the overview computation."""
    from devtools.ports import free_port
    from devtools.waiting import wait_until

    port = free_port()
    log_path = Path(os.environ["FLEETSCOPE_VAR_DIR"]) / "uvicorn.log"
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "fleetscope.asgi:application", "--host",
             "127.0.0.1", "--port", str(port), "--lifespan", "off", "--log-level", "warning",
             "--ws-per-message-deflate", "false", "--timeout-graceful-shutdown", "10"],
            cwd=ROOT, env=os.environ.copy(), stdout=log_file, stderr=subprocess.STDOUT,
        )  # fmt: skip

        def ready() -> bool | None:
            if proc.poll() is not None:
                raise SystemExit(f"uvicorn exited: see {log_path}")
            with suppress(httpx.HTTPError):
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).is_success or None
            return None

        try:
            wait_until(ready, timeout=60, what="uvicorn to answer /healthz")
            yield port
        finally:
            proc.terminate()
            stopping = time.monotonic()
            try:
                proc.wait(timeout=30)
                log(f"uvicorn stopped {time.monotonic() - stopping:.1f} s after SIGTERM")
            except subprocess.TimeoutExpired:
                # Before --timeout-graceful-shutdown (as bin/web runs it), seen after many
                # websockets: a consumer's channel-layer read outlived its cancellation.
                log("uvicorn still running 30 s after SIGTERM: killed")
                proc.kill()
                proc.wait()


def viewer_sessions(count: int) -> list[str]:
    """`count` users with the viewer role (as `manage.py grant_role NAME viewer --create`
    gives it: the overview and its socket are a viewer's, a user without a role gets
    403 / 4403), each logged in once: their session cookies."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from inventory.roles import role_grant

    cookies = []
    for i in range(count):
        user = User.objects.create_user(f"bench-viewer-{os.getpid()}-{i}")
        role_grant(user, "viewer")
        client = Client()
        client.force_login(user)
        cookies.append(client.cookies[settings.SESSION_COOKIE_NAME].value)
    return cookies


async def watch(port: int, fleet: Any, cookie: str, viewers: int, prometheus: str) -> dict:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.typing import Origin

    from dashboard.live import latest_overview, overviews_publish
    from inventory.access import ViewScope

    def publish() -> int:
        from django.db import connections

        try:
            return overviews_publish()
        finally:
            connections.close_all()

    received: list[list[str]] = [[] for _ in range(viewers)]
    url = f"ws://127.0.0.1:{port}/ws/fleets/{fleet.code}/"
    sockets = [
        await connect(url, origin=Origin(f"http://127.0.0.1:{port}"),
                      additional_headers={"Cookie": f"sessionid={cookie}"}, max_size=None)
        for _ in range(viewers)
    ]  # fmt: skip

    async def listen(i: int) -> None:
        with suppress(ConnectionClosed):
            async for message in sockets[i]:
                # Pushes are gzip-compressed JSON (dashboard.live).
                text = message if isinstance(message, str) else gzip.decompress(message).decode()
                received[i].append(text)

    async def arrived(count: int) -> None:
        deadline = time.monotonic() + 20
        while any(len(r) < count for r in received) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    tasks = [asyncio.create_task(listen(i)) for i in range(viewers)]
    # A viewer connecting while an overview is cached gets it at once (a re-sync).
    resync = int(await asyncio.to_thread(latest_overview, ViewScope(fleet)) is not None)
    await arrived(resync)
    before = await asyncio.to_thread(query_count, prometheus)
    published = 0
    for interval in range(1, INTERVALS + 1):
        published += await asyncio.to_thread(publish)
        await arrived(resync + interval)
    await asyncio.sleep(0.3)  # Prometheus counts a request after answering it
    after = await asyncio.to_thread(query_count, prometheus)
    pushes = [r[resync:] for r in received]
    for ws in sockets:
        await ws.close()
    await asyncio.gather(*tasks, return_exceptions=True)
    complete = published == INTERVALS and all(len(p) == INTERVALS for p in pushes)
    identical = complete and all(p == pushes[0] for p in pushes)
    return {"queries": (after - before) / INTERVALS, "complete": complete, "same": identical}


def bench_viewers(prometheus: str, fleet: Any) -> None:
    (cookie,) = viewer_sessions(1)
    with asgi_server() as port:
        one = asyncio.run(watch(port, fleet, cookie, 1, prometheus))
        many = asyncio.run(watch(port, fleet, cookie, VIEWERS, prometheus))
    print(f"\nc. live push through the ASGI app (uvicorn process, Redis channel layer), "
          f"{INTERVALS} intervals of overviews_publish()")  # fmt: skip
    for viewers, seen in ((1, one), (VIEWERS, many)):
        print(f"   {viewers:2d} viewer(s): {seen['queries']:.0f} Prometheus queries per interval; "
              f"every viewer got every push: {'yes' if seen['complete'] else 'NO'}, "
              f"identical payloads: {'yes' if seen['same'] else 'NO'}")  # fmt: skip
    same = "yes" if one["queries"] == many["queries"] else "NO"
    print(f"   same load for 1 and {VIEWERS} viewers: {same}   (goal: the same number)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=32)
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--renders", type=int, default=15)
    parser.add_argument("--baseline-renders", type=int, default=5, help="part a's slow path")
    parser.add_argument("--prometheus-renders", type=int, default=10)
    parser.add_argument("--database-url", help="PostgreSQL URL (default: a throwaway SQLite)")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14",
                        help="channel layer and cache for part c")  # fmt: skip
    parser.add_argument("--no-prometheus", action="store_true", help="part a only")
    args = parser.parse_args()
    with_prometheus = not args.no_prometheus
    if with_prometheus and not (shutil.which("prometheus") and shutil.which("promtool")):
        raise SystemExit("needs the Debian package prometheus (prometheus and promtool)")
    workdir = Path(tempfile.mkdtemp(prefix="fleetscope-bench-overview-"))
    setup_django(workdir / "var", args.database_url, args.redis_url if with_prometheus else None)
    from django.conf import settings
    from django.test import override_settings

    from queries import Window

    try:
        openmetrics = workdir / "history.om" if with_prometheus else None
        fleet, end = fill(args.replicas, args.hours, openmetrics)
        window = Window(end - VIEW, end, STEP_SECONDS)
        step = timedelta(seconds=STEP_SECONDS)
        moving = [
            Window(end - VIEW - k * step, end - k * step, STEP_SECONDS)
            for k in reversed(range(args.renders + 1))
        ]
        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        print(
            f"fleet: {args.replicas} replicas (+ DCGM, gateway, prober) x {args.hours:g} h at "
            f"{STEP_SECONDS:g} s; database {engine}"
        )
        bench_local(fleet, moving, args.renders, args.baseline_renders)
        if openmetrics is not None:
            with prometheus_on(openmetrics, workdir) as prometheus, override_settings(
                PROMETHEUS_URL=prometheus, PROMETHEUS_TIMEOUT_SECONDS=30.0
            ):  # fmt: skip
                bench_prometheus(prometheus, fleet, window, args.prometheus_renders)
                bench_viewers(prometheus, fleet)
        fleet.delete()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
