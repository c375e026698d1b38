"""Drill: PostgreSQL restarts while FleetScope scrapes.

A PostgreSQL cluster of the drill's own (initdb in a temporary directory, a free loopback
port; as root, run as the `postgres` user) holds FleetScope's database. FleetScope runs as
`manage.py serve_embedded` (web server and in-process scheduler in one process, scraping a
simulated fleet every second) and records an Alertmanager incident with its walk. Then
PostgreSQL is stopped for a few cycles and started again. FleetScope is not restarted:
readiness says the database is unreachable, the first cycle that cannot run logs why
(later ones a line a minute) without ending the scheduler, an alert sent meanwhile is
refused whole (and taken when Alertmanager sends it again), and scraping resumes by
itself. Every row written before the restart is still there, and no cycle was half
written.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from devtools.ports import free_port
from devtools.waiting import get_when_listening, wait_until
from fleetsim.api import start_fleet
from tests.drills.services import (
    PostgresServer,
    Process,
    fleetscope_process,
    manage,
    postgres_server,
    production_env,
)
from tests.triage.factories import TOKEN, a_payload, an_alert

# Not a django_db test: FleetScope's database here is the drill's own, never the test's.
pytestmark = [pytest.mark.drill]

OUTAGE_SECONDS = 3.0
CYCLE_FAILED = "ERROR fleetscope.inprocess: periodic job scrape-fleets failed"

SETUP = """
from django.core.management import call_command
from inventory.registration import targets_import
from inventory.targets import TargetSpec
call_command("migrate", verbosity=0)
targets_import(fleet_slug="drill", specs=[TargetSpec({url!r}, "vllm", {{}})])
"""


def rows(server: PostgresServer, sql: str) -> list[tuple[Any, ...]]:
    with server.connect("fleetscope") as conn:
        return conn.execute(sql).fetchall()


def scrape_runs(server: PostgresServer) -> list[tuple[int, datetime, str]]:
    return [
        (pk, started, status)
        for pk, started, status in rows(
            server, "SELECT id, started_at, status FROM inventory_scraperun ORDER BY id"
        )
    ]


def evidence(server: PostgresServer) -> dict[str, list[tuple[Any, ...]]]:
    """Every incident, timeline line and walk record, as stored."""
    return {
        "incidents": rows(server, "SELECT id, alert_fingerprint, status FROM triage_incident"),
        "events": rows(server, "SELECT id, incident_id, kind, text FROM triage_incidentevent"),
        "walks": rows(server, "SELECT id, incident_id, walk::text FROM triage_walkrecord"),
    }


def alert(web: str, fingerprint: str) -> httpx.Response:
    return httpx.post(
        f"{web}/incidents/alertmanager/",
        content=a_payload(an_alert(fingerprint=fingerprint, fleet="drill")),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        timeout=30,
    )


def walks_of(server: PostgresServer, fingerprint: str) -> int | None:
    found = rows(
        server,
        "SELECT count(w.id) FROM triage_walkrecord w JOIN triage_incident i "
        f"ON w.incident_id = i.id WHERE i.alert_fingerprint = '{fingerprint}'",
    )
    return int(found[0][0]) or None


@pytest.fixture
def fleetscope(tmp_path: Path) -> Iterator[tuple[PostgresServer, str, Process]]:
    """The drill's PostgreSQL with FleetScope's database, a simulated fleet registered in
    it, and `serve_embedded` scraping it; all stopped whatever the drill does."""
    with postgres_server() as server, start_fleet(replicas=1, seed=6, speed=10) as sim:
        with server.connect() as conn:
            conn.execute("CREATE DATABASE fleetscope")
        env = production_env(
            DATABASE_URL=server.url("fleetscope"),
            FLEETSCOPE_SCRAPE_INTERVAL_SECONDS="1",
            # The lease a cycle cut off by the outage leaves behind is 3 timeouts long.
            FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS="1",
            FLEETSCOPE_SCRAPE_PROCESSES="0",
            FLEETSCOPE_ALERTMANAGER_TOKEN=TOKEN,
            DATABASE_CONNECT_TIMEOUT_SECONDS="1",
        )
        target = next(t for t in sim.targets if t.kind == "vllm")
        manage("shell", "-c", SETUP.format(url=target.url), env=env)
        port = free_port()
        with fleetscope_process(
            ["manage.py", "serve_embedded", "--port", str(port)],
            env=env,
            log=tmp_path / "fleetscope.log",
        ) as process:
            web = f"http://127.0.0.1:{port}"
            get_when_listening(f"{web}/healthz", timeout=60)
            yield server, web, process
            # SIGTERM stops it as Ctrl-C does: cleanly, whatever it went through.
            process.popen.terminate()
            assert process.popen.wait(timeout=20) == 0, process.output()[-2000:]


def test_scraping_resumes_by_itself_after_postgres_restarts_and_nothing_written_is_lost(
    fleetscope: tuple[PostgresServer, str, Process],
) -> None:
    server, web, process = fleetscope
    wait_until(lambda: len(scrape_runs(server)) >= 3 or None, timeout=30, what="3 scrapes")
    assert alert(web, "bbbb000000000001").json()["opened"] == 1
    wait_until(lambda: walks_of(server, "bbbb000000000001"), timeout=30, what="the walk")
    runs_before, evidence_before = scrape_runs(server), evidence(server)

    # --- PostgreSQL stops (every session ended, as an operator's restart does) ------------
    server.stop("fast")
    down_at = time.time()
    log_before = process.output()
    failures_before = log_before.count(CYCLE_FAILED)
    readiness = httpx.get(f"{web}/readyz", timeout=30)
    refused = alert(web, "bbbb000000000002")
    # Several cycles come due while it is down; each fails on its own. Only the first is
    # logged, and it may already have been while readiness and the alert were answered.
    process.wait_for_output(CYCLE_FAILED, after=len(log_before), timeout=20)
    time.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.time()))

    # --- PostgreSQL starts again; FleetScope is left alone -------------------------------
    server.start()
    up_at = time.time()
    resumed = wait_until(
        lambda: next((r for r in scrape_runs(server) if r[1].timestamp() > up_at), None),
        timeout=30,
        what="a scrape after PostgreSQL came back",
    )
    # Alertmanager sends the refused alert again: now it is taken, and walked.
    retried = alert(web, "bbbb000000000002")
    wait_until(lambda: walks_of(server, "bbbb000000000002"), timeout=30, what="its walk")
    ready_again = httpx.get(f"{web}/readyz", timeout=30)
    process.alive()
    runs_after, evidence_after = scrape_runs(server), evidence(server)
    log = process.output()

    print(f"scraping resumed {resumed[1].timestamp() - up_at:.1f}s after PostgreSQL came back")
    # What readiness says while it is down: which dependency, not a 500 or a hang.
    assert readiness.status_code == 503
    database = readiness.json()["checks"]["database"]
    assert (database["status"], database["error"]) == (
        "down", "database unreachable: OperationalError"
    )  # fmt: skip
    # The alert sent meanwhile was refused whole: Alertmanager retries a 5xx.
    assert refused.status_code == 500
    # The outage's first failed cycle is logged with its traceback (a line a minute after
    # that, not one per tick), the scheduler went on, and it says when scrapes work again.
    failures = log.count(CYCLE_FAILED) - failures_before
    assert failures == 1, failures
    assert "periodic job scrape-fleets works again after" in log
    assert "psycopg.OperationalError" in log or "django.db.utils.OperationalError" in log
    # Nothing written before the restart is missing or changed, and no cycle is half
    # written: a cycle's runs are all in, or none.
    assert set(runs_before) <= set(runs_after)
    for kind in ("incidents", "events", "walks"):
        assert set(evidence_before[kind]) <= set(evidence_after[kind]), kind
    outage = [r for r in runs_after if down_at <= r[1].timestamp() <= up_at]
    assert outage == [], outage
    assert all(status == "succeeded" for _, _, status in runs_after)
    # Back: readiness is green, the retried alert opened its incident once, with one walk.
    assert ready_again.status_code == 200, ready_again.text
    assert retried.json()["opened"] == 1
    assert [i[1] for i in evidence_after["incidents"]] == ["bbbb000000000001", "bbbb000000000002"]
    assert len(evidence_after["walks"]) == 2
