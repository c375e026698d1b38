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
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.loadrun.measured import Run  # noqa: E402
from benchmarks.loadrun.prepare import (  # noqa: E402
    flush_redis,
    fresh_database,
    prometheus_history,
)
from benchmarks.loadrun.publisher import publisher  # noqa: E402
from benchmarks.loadrun.report import figures, report  # noqa: E402
from benchmarks.loadrun.run import Target, load_run  # noqa: E402
from benchmarks.loadrun.sockets import socket_clients  # noqa: E402
from benchmarks.overview import (  # noqa: E402
    asgi_server,
    prometheus_on,
    setup_django,
    viewer_sessions,
)
from benchmarks.overview_fill import STEP_SECONDS, fill, log  # noqa: E402

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/fleetscope_load"
DEFAULT_REDIS = "redis://127.0.0.1:6379/12"


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
