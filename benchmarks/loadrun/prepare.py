"""What the load benchmark starts from: its own PostgreSQL database and Redis database,
emptied (the default URLs only), and the fleet's history for Prometheus."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.overview_fill import STEP_SECONDS, log

PAST_SECONDS = 70 * 60  # the default view (1 h) and the rate windows before it


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
