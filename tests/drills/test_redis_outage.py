"""Drill: the broker and cache Redis stops while production FleetScope runs, then starts
again on the same port.

Everything is real and production-shaped: a redis-server of the drill's own, the web
process (uvicorn), a Celery worker and Celery beat, all on the test's PostgreSQL database,
scraping a simulated fleet every second. While Redis is down, an Alertmanager alert is
still recorded (committed before anything is queued), its walk is not lost (it cannot be
queued, so the web process walks it itself and says so in its log), readiness says which
dependency is missing, and beat replays no backlog of stale scrapes when Redis is back:
scraping resumes at its own pace, and the next alert's walk goes through the queue again
to the worker, with no process restarted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from devtools.ports import free_port
from devtools.waiting import get_when_listening, wait_until
from fleetsim.api import start_fleet
from inventory.models import ScrapeRun
from inventory.registration import targets_import
from inventory.targets import TargetSpec
from tests.drills.services import (
    Process,
    RedisServer,
    fleetscope_process,
    production_env,
    this_test_database_url,
)
from tests.triage.factories import TOKEN, a_payload, an_alert
from triage.models import EventKind, Incident, WalkRecord

pytestmark = [pytest.mark.drill, pytest.mark.django_db(transaction=True)]

INTERVAL = 1  # FLEETSCOPE_SCRAPE_INTERVAL_SECONDS for the drill's processes
OUTAGE_SECONDS = 4.0
QUEUED_WARNING = "not queued (broker unreachable: OperationalError); walking it in this process"


def scrape_starts(fleet_slug: str) -> list[datetime]:
    return sorted(
        ScrapeRun.objects.filter(endpoint__fleet__slug=fleet_slug).values_list(
            "started_at", flat=True
        )
    )


def since(moment: float) -> datetime:
    return datetime.fromtimestamp(moment, UTC)


def task_runs(worker: Process, task: str) -> list[float]:
    """When the worker finished each run of `task` (its log's local times)."""
    runs = []
    for line in worker.output().splitlines():
        if f"Task {task}[" in line and "succeeded in" in line:
            stamp = line[1 : line.index(":", 21)]  # [2026-12-02 04:44:58,123: INFO/...
            local = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").astimezone()
            runs.append(local.timestamp())
    return runs


def walked(incident_id: int) -> bool | None:
    return WalkRecord.objects.filter(incident_id=incident_id).exists() or None


def alert(web: str, fingerprint: str) -> httpx.Response:
    body = a_payload(an_alert(fingerprint=fingerprint, fleet="drill"))
    return httpx.post(
        f"{web}/incidents/alertmanager/",
        content=body,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        timeout=30,
    )


@pytest.fixture
def production(tmp_path: Path) -> Iterator[tuple[RedisServer, str, Process, Process, Process]]:
    """Redis, then the web process, a Celery worker and Celery beat on it, all ended (with
    their process groups) whatever the drill does."""
    redis_server = RedisServer(tmp_path)
    web_port = free_port()
    env = production_env(
        DATABASE_URL=this_test_database_url(),
        REDIS_URL=redis_server.url(),
        FLEETSCOPE_SCRAPE_INTERVAL_SECONDS=str(INTERVAL),
        FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS="2",
        FLEETSCOPE_SCRAPE_PROCESSES="0",
        FLEETSCOPE_ALERTMANAGER_TOKEN=TOKEN,
        # Connections must not outlive their use: the test database is flushed afterwards.
        DATABASE_CONN_MAX_AGE_SECONDS="0",
        REDIS_CONNECT_TIMEOUT_SECONDS="0.5",
        REDIS_TIMEOUT_SECONDS="1",
    )
    celery = ["-m", "celery", "-A", "fleetscope"]
    with ExitStack() as stack:
        redis_server.start()
        stack.callback(redis_server.stop)
        web = stack.enter_context(
            fleetscope_process(
                ["-m", "uvicorn", "fleetscope.asgi:application", "--host", "127.0.0.1",
                 "--port", str(web_port), "--lifespan", "off", "--log-level", "warning"],
                env=env, log=tmp_path / "web.log",
            )
        )  # fmt: skip
        worker = stack.enter_context(
            fleetscope_process(
                [*celery, "worker", "--pool", "solo", "--loglevel", "INFO", "--without-mingle",
                 "--without-gossip", "--hostname", "drill@%h"],
                env=env, log=tmp_path / "worker.log",
            )
        )  # fmt: skip
        beat = stack.enter_context(
            fleetscope_process(
                [*celery, "beat", "--loglevel", "INFO", "--max-interval", "1",
                 "--schedule", str(tmp_path / "beat-schedule")],
                env=env, log=tmp_path / "beat.log",
            )
        )  # fmt: skip
        web_url = f"http://127.0.0.1:{web_port}"
        get_when_listening(f"{web_url}/healthz", timeout=60)
        yield redis_server, web_url, web, worker, beat


def test_alerts_during_a_redis_outage_are_recorded_and_walked_and_beat_replays_no_backlog(
    production: tuple[RedisServer, str, Process, Process, Process],
) -> None:
    redis_server, web, web_process, worker, beat = production
    with start_fleet(replicas=1, scenario="steady", speed=10, seed=5) as sim:
        specs = [TargetSpec(t.url, t.kind, {}) for t in sim.targets if t.kind == "vllm"]
        targets_import(fleet_slug="drill", specs=specs)
        wait_until(
            lambda: len(scrape_starts("drill")) >= 3 or None,
            timeout=60,
            what="three scrape cycles through beat and the worker",
        )
        assert httpx.get(f"{web}/readyz").status_code == 200

        # --- Redis stops ---------------------------------------------------------------
        redis_server.stop()
        down_at = time.time()
        rows_before = scrape_starts("drill")
        response = alert(web, "aaaa000000000001")
        readiness = httpx.get(f"{web}/readyz", timeout=30)
        first = Incident.objects.get(alert_fingerprint="aaaa000000000001")
        wait_until(lambda: walked(first.pk), timeout=30, what="the first incident's walk")
        web_process.wait_for_output(QUEUED_WARNING)
        # The outage lasts several beat intervals.
        time.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.time()))
        during_outage = [s for s in scrape_starts("drill") if s > since(down_at + INTERVAL)]

        # --- Redis starts again on the same port (empty: it keeps nothing) ----------------
        redis_server.start()
        up_at = time.time()
        resumed = wait_until(
            lambda: next((s for s in scrape_starts("drill") if s > since(up_at)), None),
            timeout=30,
            what="scrapes to resume after Redis came back",
        )
        second_response = alert(web, "aaaa000000000002")
        second = Incident.objects.get(alert_fingerprint="aaaa000000000002")
        wait_until(lambda: walked(second.pk), timeout=30, what="the second incident's walk")
        worker.wait_for_output("triage.tasks.walk_incident")
        # A window of four intervals after the first scrape back.
        window_end = resumed.timestamp() + 4 * INTERVAL
        time.sleep(max(0.0, window_end + 0.5 - time.time()))
        after = [s for s in scrape_starts("drill") if resumed <= s <= since(window_end)]
        # The leases would hide a burst of cycles from the rows: count the tasks run.
        ticks_after = [t for t in task_runs(worker, "inventory.tasks.scrape_all_fleets")
                       if up_at <= t <= window_end]  # fmt: skip
        backlog_in_redis = redis_server.client().llen("celery")
        for process in (web_process, worker, beat):
            process.alive()  # nothing crashed or had to be restarted

    # Alertmanager's answer: the alert was taken, not a 500 after the commit.
    assert response.status_code == 200, response.text[:300]
    assert response.json()["opened"] == 1
    # Readiness names the missing dependency (and the database that is fine).
    assert readiness.status_code == 503
    checks = readiness.json()["checks"]
    assert checks["redis"] == {
        "status": "down", "required": True, "error": "redis unreachable: ConnectionError",
        "latency_seconds": checks["redis"]["latency_seconds"],
    }  # fmt: skip
    assert checks["database"]["status"] == "ok"
    # The incident, with its whole timeline and one walk (by the web process, as logged).
    assert first.source == "alertmanager"
    assert list(first.events.values_list("kind", flat=True)) == [EventKind.STATUS, EventKind.WALK]
    assert first.walks.count() == 1
    # Nothing ran without the broker (a cycle already under way may finish), and nothing
    # written before was lost.
    assert len(during_outage) <= 1, during_outage
    assert set(rows_before) <= set(scrape_starts("drill"))
    # Back: at most one scrape an interval, no burst of ticks saved up during the outage.
    print(
        f"scrapes resumed {resumed.timestamp() - up_at:.1f}s after Redis came back; "
        f"{len(after)} in the four intervals after"
    )
    assert 1 <= len(after) <= 4 + 1, after
    assert len(ticks_after) <= (window_end - up_at) / INTERVAL + 1, ticks_after
    # What the operator reads: beat could not send (and moved on), the worker reconnected.
    assert "Couldn't apply scheduled task scrape-fleets: Error 111 connecting" in beat.output()
    assert "Connection to broker lost. Trying to re-establish" in worker.output()
    assert backlog_in_redis <= 2
    # The second alert's walk went through the queue to the worker, not the fallback.
    assert second_response.status_code == 200
    assert second.walks.count() == 1
    assert web_process.output().count(QUEUED_WARNING) == 1
