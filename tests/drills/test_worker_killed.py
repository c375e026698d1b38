"""Drill: a Celery worker is killed with SIGKILL in the middle of a task (the OOM killer, a
node lost, `kill -9`), and a new worker starts.

Everything is real: a redis-server of the drill's own as the broker, Celery workers as
`bin/worker` starts them (prefork, one pool process here) and Celery beat, on the test's
PostgreSQL database, scraping a simulated fleet every second. The drill's worker settings
(tests/drills/settings_fast_redelivery.py) only shorten the redelivery of a dead worker's
task from production's 5 minutes to 10 s, with the time limits.

A scrape is cut off while it fetches (one replica is held behind a stand-in that answers
when the drill says: a real vLLM cannot be made slow on demand) or while it records the
cycle (a table lock holds its transaction open, with frames already inserted). Either way
nothing of the cycle is kept, the dead worker's lease keeps the next ticks from
overlapping it until it lapses, then the new worker scrapes; the cut-off task itself comes
back after the redelivery delay and is dropped as expired (the next ticks did its work),
never run twice.

An incident's walk is cut off while it records its result. When only the pool process
dies, the worker requeues the walk at once (reject_on_worker_lost); when the whole worker
dies, the walk comes back after the redelivery delay to the new worker. Each incident ends
with one walk and one timeline line for it: none lost, none doubled, none half written.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from celery import Celery
from django.db.models import Count
from django.utils import timezone

from devtools.waiting import wait_until
from fleetsim.api import start_fleet
from inventory.models import Endpoint, Fleet, ScrapeRun
from inventory.registration import targets_import
from inventory.store import frames_in_window
from inventory.targets import TargetSpec
from tests.drills.services import (
    HeldReplica,
    Process,
    RedisServer,
    backend_gone,
    backend_has_written,
    backend_waiting_on_lock,
    celery_beat_args,
    celery_worker_args,
    children_of,
    fleetscope_process,
    kill_now,
    process_group_end,
    production_env,
    table_locked,
    this_test_database_url,
)
from tests.drills.settings_fast_redelivery import REDELIVER_AFTER_SECONDS
from tests.triage.factories import a_fleet, an_incident
from triage.models import EventKind, IncidentEvent, WalkDelivery, WalkRecord

pytestmark = [pytest.mark.drill, pytest.mark.django_db(transaction=True)]

INTERVAL = 1  # FLEETSCOPE_SCRAPE_INTERVAL_SECONDS
SCRAPE_TIMEOUT = 2  # FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS: a cycle's lease is 3 of these
SCRAPE_RUN_INSERT = 'INSERT INTO "inventory_scraperun"'
WALK_EVENT_INSERT = 'INSERT INTO "triage_incidentevent"'


@dataclass
class Deployment:
    """The drill's Redis and the environment of its FleetScope processes; the processes it
    starts end (with their process groups) when the drill does, whatever happened."""

    redis: RedisServer
    env: dict[str, str]
    logs: Path
    stack: ExitStack

    def start(self, name: str, args: list[str]) -> Process:
        return self.stack.enter_context(
            fleetscope_process(args, env=self.env, log=self.logs / f"{name}.log")
        )

    def worker(self, name: str) -> Process:
        worker = self.start(name, celery_worker_args(name))
        worker.wait_for_output("ready.", timeout=60)
        return worker

    def unacknowledged(self) -> list[float]:
        """When each task message delivered to a worker and not acknowledged yet was
        delivered (kombu's `unacked_index`), as a UNIX time."""
        found = self.redis.client().zrange("unacked_index", 0, -1, withscores=True)
        return [float(entry[1]) for entry in found]


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    redis_server = RedisServer(tmp_path)
    env = production_env(
        DJANGO_SETTINGS_MODULE="tests.drills.settings_fast_redelivery",
        DATABASE_URL=this_test_database_url(),
        REDIS_URL=redis_server.url(),
        FLEETSCOPE_SCRAPE_INTERVAL_SECONDS=str(INTERVAL),
        FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS=str(SCRAPE_TIMEOUT),
        FLEETSCOPE_SCRAPE_PROCESSES="0",
        # Connections must not outlive their use: the test database is flushed afterwards.
        DATABASE_CONN_MAX_AGE_SECONDS="0",
    )
    with ExitStack() as stack:
        redis_server.start()
        stack.callback(redis_server.stop)
        yield Deployment(redis_server, env, tmp_path, stack)


def task_ids(process: Process, task: str, event: str) -> list[str]:
    """Ids of `task` in the worker's log lines that say `event` ("received", "succeeded")."""
    pattern = rf"Task {re.escape(task)}\[([0-9a-f-]+)\] {event}"
    return re.findall(pattern, process.output())


def runs_by_endpoint(fleet: Fleet) -> dict[int, list[ScrapeRun]]:
    return {
        endpoint.pk: list(ScrapeRun.objects.filter(endpoint=endpoint).order_by("started_at"))
        for endpoint in Endpoint.objects.filter(fleet=fleet)
    }


@pytest.mark.parametrize("cut_off", ["fetching", "recording"])
def test_a_scrape_cut_off_by_sigkill_is_not_kept_nor_run_twice_and_the_next_ticks_scrape(
    deployment: Deployment, cut_off: str
) -> None:
    began = time.monotonic()
    db = this_test_database_url()
    with start_fleet(replicas=2, speed=10, seed=7) as sim, ExitStack() as stack:
        direct, behind = [t for t in sim.targets if t.kind == "vllm"][:2]
        held = HeldReplica(behind.url)
        stack.callback(held.close)
        targets_import(
            fleet_slug="drill",
            specs=[TargetSpec(direct.url, "vllm", {}), TargetSpec(held.url, "vllm", {})],
        )
        fleet = Fleet.objects.get(slug="drill")
        first = deployment.worker("first-worker")
        beat = deployment.start("beat", celery_beat_args(deployment.logs / "beat-schedule"))
        wait_until(
            lambda: ScrapeRun.objects.filter(endpoint__fleet=fleet).count() >= 4 or None,
            timeout=60,
            what="two whole cycles through beat and the first worker",
        )

        # --- The worker dies mid-scrape -------------------------------------------------
        with ExitStack() as cut:
            if cut_off == "fetching":
                held.hold()
                cut.callback(held.release)
                wait_until(lambda: held.waiting.is_set() or None, what="a scrape held mid-fetch")
            else:
                # The cycle's transaction has written its frames and waits to write its runs.
                cut.enter_context(table_locked(db, "inventory_scraperun"))
                orphan = wait_until(
                    lambda: backend_waiting_on_lock(db, SCRAPE_RUN_INSERT),
                    what="a cycle's transaction waiting to record its runs",
                )
                assert backend_has_written(db, orphan)  # its frames, not committed
            killed_task = task_ids(first, "inventory.tasks.scrape_fleet", "received")[-1]
            lease_until = Fleet.objects.values_list("scrape_lease_until", flat=True).get(
                pk=fleet.pk
            )
            kill_now(first)
        killed_at = time.time()
        assert lease_until is not None
        claimed_at = lease_until - timedelta(seconds=3 * SCRAPE_TIMEOUT)

        # --- A new worker starts ----------------------------------------------------------
        second = deployment.worker("second-worker")
        resumed = wait_until(
            lambda: (
                ScrapeRun.objects.filter(endpoint__fleet=fleet, started_at__gt=claimed_at)
                .order_by("started_at")
                .first()
            ),
            timeout=30,
            what="a scrape by the new worker",
        )
        # The cut-off task comes back after the redelivery delay, and is dropped.
        second.wait_for_output(
            f"Discarding revoked task: inventory.tasks.scrape_fleet[{killed_task}]", timeout=30
        )
        if cut_off == "recording":
            # The dead worker's transaction ended with its connection: rolled back.
            wait_until(lambda: backend_gone(db, orphan), timeout=30, what="its backend to end")
        second.alive()
        beat.alive()
        # Beat, then the worker, stopped as an operator does (the worker ends its task and
        # acknowledges it): what is stored now is final.
        for process in (beat, second):
            process_group_end(process.popen)
        runs = runs_by_endpoint(fleet)
        frames = [
            (frame.endpoint_id, frame.at)
            for frame in frames_in_window(
                endpoint_ids=list(runs), start=datetime.min.replace(tzinfo=UTC), end=timezone.now()
            )
        ]
        unacknowledged = deployment.unacknowledged()
    took = time.monotonic() - began

    all_runs = sorted((r for rs in runs.values() for r in rs), key=lambda r: r.started_at)
    resumed_after = resumed.started_at.timestamp() - killed_at
    print(
        f"[{cut_off}] killed with task {killed_task}; scraping resumed {resumed_after:.1f}s "
        f"after the kill (lease until {lease_until:%H:%M:%S.%f}); the task came back and was "
        f"dropped; drill took {took:.1f}s"
    )
    # The cut-off cycle left nothing, and nothing scraped the fleet until its lease lapsed:
    # the first scrape since it started is the new worker's, once the lease had lapsed.
    assert resumed.started_at >= lease_until, (resumed, claimed_at, lease_until)
    # The new worker scraped both replicas, the held one included, and went on doing so.
    after = [r for r in all_runs if r.started_at >= resumed.started_at]
    assert {r.endpoint_id for r in after} == set(runs), after
    assert all(r.status == "succeeded" for r in all_runs), [r.error for r in all_runs]
    # Every cycle is whole: each replica has a run for every cycle, and a frame per run.
    first_runs, second_runs = runs.values()
    for one, other in zip(first_runs, second_runs, strict=True):
        assert abs((one.started_at - other.started_at).total_seconds()) < INTERVAL / 2
    assert set(frames) == {(r.endpoint_id, r.started_at) for r in all_runs}
    # No cycle recorded twice: one row per replica and start, for runs and frames alike.
    assert (
        not ScrapeRun.objects.values("endpoint", "started_at")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert len(frames) == len(set(frames))
    # The cut-off task: received by both workers, run by neither; nothing left unacknowledged.
    assert killed_task in task_ids(second, "inventory.tasks.scrape_fleet", "received")
    assert killed_task not in task_ids(first, "inventory.tasks.scrape_fleet", "succeeded")
    assert killed_task not in task_ids(second, "inventory.tasks.scrape_fleet", "succeeded")
    assert unacknowledged == []


def walks_and_lines(incident_id: int) -> tuple[int, int]:
    return (
        WalkRecord.objects.filter(incident_id=incident_id).count(),
        IncidentEvent.objects.filter(incident_id=incident_id, kind=EventKind.WALK).count(),
    )


def test_a_walk_cut_off_by_sigkill_is_delivered_again_and_recorded_once(
    deployment: Deployment,
) -> None:
    began = time.monotonic()
    db = this_test_database_url()
    fleet = a_fleet("drill")
    pool_death, worker_death = an_incident(fleet, "pool death"), an_incident(fleet, "worker death")
    worker = deployment.worker("first-worker")
    broker = Celery("drill-client", broker=deployment.redis.url(), set_as_current=False)
    try:
        # --- The pool process dies mid-walk; its worker lives -----------------------------
        with table_locked(db, "triage_incidentevent"):
            broker.send_task("triage.tasks.walk_incident", (pool_death.pk,))
            cut_off = wait_until(
                lambda: backend_waiting_on_lock(db, WALK_EVENT_INSERT),
                what="the walk's transaction waiting to record its timeline line",
            )
            assert backend_has_written(db, cut_off)  # the walk record, not committed
            (first_delivered_at,) = deployment.unacknowledged()
            (pool_process,) = children_of(worker.popen.pid)
            os.kill(pool_process, signal.SIGKILL)
        wait_until(lambda: walks_and_lines(pool_death.pk) == (1, 1) or None, what="its walk")
        requeue_took = time.time() - first_delivered_at
        worker.wait_for_output("exited with 'signal 9 (SIGKILL)'")

        # --- The whole worker dies mid-walk ------------------------------------------------
        with table_locked(db, "triage_incidentevent"):
            broker.send_task("triage.tasks.walk_incident", (worker_death.pk,))
            orphan = wait_until(
                lambda: backend_waiting_on_lock(db, WALK_EVENT_INSERT),
                what="the walk's transaction waiting to record its timeline line",
            )
            assert backend_has_written(db, orphan)  # the walk record, not committed
            killed_task = task_ids(worker, "triage.tasks.walk_incident", "received")[-1]
            (delivered_at,) = deployment.unacknowledged()
            kill_now(worker)
        wait_until(lambda: backend_gone(db, orphan), timeout=30, what="the dead walk's backend")
        nothing_yet = walks_and_lines(worker_death.pk)
        second = deployment.worker("second-worker")
        wait_until(
            lambda: walks_and_lines(worker_death.pk) == (1, 1) or None,
            timeout=REDELIVER_AFTER_SECONDS + 20,
            what="the walk delivered again to the new worker",
        )
        redelivery_took = time.time() - delivered_at
        second.wait_for_output(f"Task triage.tasks.walk_incident[{killed_task}] succeeded")
        # Acknowledged once the worker has the pool process's result: nothing left over.
        wait_until(lambda: deployment.unacknowledged() == [] or None, what="the walk acknowledged")
    finally:
        broker.close()
    took = time.monotonic() - began

    print(
        f"pool process killed: walk requeued and recorded {requeue_took:.1f}s after its first "
        f"delivery; worker killed: walk delivered again and recorded {redelivery_took:.1f}s "
        f"after its first delivery (redelivery after {REDELIVER_AFTER_SECONDS:g}s); drill took "
        f"{took:.1f}s"
    )
    # The walk cut off under a living worker was requeued by it (once it noticed, within
    # the pool's 5 s upkeep), before Redis would have given it back.
    assert requeue_took < REDELIVER_AFTER_SECONDS
    assert "WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL)" in worker.output()
    # The dead worker's walk was rolled back whole (no walk without its line), came back
    # once the redelivery delay had passed, and ran once.
    assert nothing_yet == (0, 0)
    assert redelivery_took >= REDELIVER_AFTER_SECONDS
    assert task_ids(second, "triage.tasks.walk_incident", "succeeded") == [killed_task]
    for incident in (pool_death, worker_death):
        assert walks_and_lines(incident.pk) == (1, 1), incident.title
        # Both deliveries of each walk were counted under one task id, and it ended.
        delivery = WalkDelivery.objects.get(incident=incident)
        assert delivery.attempts == 2 and delivery.finished_at is not None, incident.title
