from __future__ import annotations

import logging
import threading

import pytest
from django.test import override_settings

from devtools.waiting import wait_until
from fleetscope.inprocess import InProcessScheduler
from fleetscope.schedule import PeriodicJob, beat_schedule, periodic_jobs

# The scheduler closes stale database connections after each job.
pytestmark = pytest.mark.django_db

CALLS: list[str] = []


def record_ok() -> None:
    CALLS.append("ok")


def record_failure() -> None:
    CALLS.append("failed")
    raise RuntimeError("boom")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    CALLS.clear()


def job(function: str, interval: float = 10.0) -> PeriodicJob:
    return PeriodicJob(name=function, task="unused", function=function, interval_seconds=interval)


def test_jobs_run_once_per_interval() -> None:
    clock = FakeClock()
    scheduler = InProcessScheduler([job(f"{__name__}.record_ok")], clock=clock)
    assert scheduler.run_due() == 1
    clock.now += 5
    assert scheduler.run_due() == 0
    clock.now += 5
    assert scheduler.run_due() == 1
    assert CALLS == ["ok", "ok"]


def test_a_failing_job_does_not_stop_the_others() -> None:
    clock = FakeClock()
    scheduler = InProcessScheduler(
        [job(f"{__name__}.record_failure"), job(f"{__name__}.record_ok")], clock=clock
    )
    assert scheduler.run_due() == 2
    assert CALLS == ["failed", "ok"]


def test_a_job_failing_every_tick_logs_its_traceback_once_then_a_line_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    outage = {"on": True}

    def scrape() -> None:
        if outage["on"]:
            raise ConnectionError("the database is down")

    scheduler = InProcessScheduler([job("scrape", 1.0)], clock=clock, resolve=lambda n: scrape)
    with caplog.at_level(logging.WARNING, logger="fleetscope.inprocess"):
        for _ in range(150):  # two and a half minutes of ticks, each failing
            scheduler.run_due()
            clock.now += 1
        outage["on"] = False
        scheduler.run_due()
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert lines == [
        ("ERROR", "periodic job scrape failed", True),
        ("ERROR", "periodic job scrape still failing: 61 times in a row over 60 s, the last "
                  "ConnectionError: the database is down", False),
        ("ERROR", "periodic job scrape still failing: 121 times in a row over 120 s, the last "
                  "ConnectionError: the database is down", False),
        ("WARNING", "periodic job scrape works again after 150 failures in a row over 150 s",
         False),
    ]  # fmt: skip
    # A new outage is news again: its traceback is logged.
    outage["on"] = True
    clock.now += 1
    scheduler.run_due()
    assert caplog.records[-1].exc_info is not None


def test_an_overrunning_job_skips_missed_ticks_instead_of_replaying_them() -> None:
    clock = FakeClock()

    def slow() -> None:
        clock.now += 35  # the job takes three and a half intervals

    scheduler = InProcessScheduler([job("slow")], clock=clock, resolve=lambda name: slow)
    scheduler.run_due()
    assert scheduler.seconds_until_next() == pytest.approx(5.0)
    assert scheduler.run_due() == 0


def test_beat_and_in_process_scheduler_share_one_job_list_with_expiry_under_interval() -> None:
    schedule = beat_schedule()
    jobs = periodic_jobs()
    assert set(schedule) == {j.name for j in jobs}
    for j in jobs:
        entry = schedule[j.name]
        assert entry["task"] == j.task
        assert 0 < entry["options"]["expires"] < j.interval_seconds


def test_every_scheduled_function_and_task_exists() -> None:
    from django.utils.module_loading import import_string

    from fleetscope.celery import app

    app.loader.import_default_modules()
    for j in periodic_jobs():
        assert callable(import_string(j.function))
        assert j.task in app.tasks


def test_live_overviews_run_in_a_lane_of_their_own_apart_from_scrapes() -> None:
    lanes = {j.name: j.lane for j in periodic_jobs()}
    assert lanes["publish-overviews"] != lanes["scrape-fleets"]
    assert lanes["scrape-fleets"] == lanes["record-heartbeat"]


def test_a_job_stuck_in_one_lane_does_not_hold_up_another_lane() -> None:
    release = threading.Event()
    scrapes: list[float] = []
    jobs = [
        PeriodicJob("stuck", "unused", "stuck", interval_seconds=0.05, lane="live"),
        PeriodicJob("scrape", "unused", "scrape", interval_seconds=0.05),
    ]
    functions = {"stuck": lambda: release.wait(30), "scrape": lambda: scrapes.append(1.0)}
    scheduler = InProcessScheduler(jobs, resolve=functions.__getitem__)
    scheduler.start()
    try:
        wait_until(lambda: len(scrapes) >= 5 or None, timeout=10, what="five scrape runs")
        assert scheduler.runs("stuck") == 0  # still inside its first run all along
    finally:
        release.set()
        scheduler.stop()


@pytest.mark.django_db(transaction=True)
def test_scrapes_keep_being_recorded_while_a_live_computation_is_stuck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dashboard import live
    from fleetsim.api import start_fleet
    from inventory.access import ViewScope
    from inventory.models import Fleet, ScrapeRun
    from inventory.registration import targets_import
    from inventory.targets import TargetSpec

    stuck, release = threading.Event(), threading.Event()

    def computation_that_hangs(fleet: Fleet) -> dict[str, object]:
        # Whatever holds it (a Prometheus slower than any deadline, a locked table), the
        # embedded scheduler's scrapes must not wait for it.
        stuck.set()
        release.wait(60)
        return {"panels": []}

    monkeypatch.setattr(live, "overview_for_default_view", computation_that_hangs)
    wanted = ("record-heartbeat", "scrape-fleets", "publish-overviews")
    with (
        start_fleet(replicas=1, scenario="steady", speed=20, seed=4) as sim,
        override_settings(FLEETSCOPE_SCRAPE_INTERVAL_SECONDS=1),
    ):
        specs = [TargetSpec(t.url, t.kind, {}) for t in sim.targets if t.kind == "vllm"]
        fleet = targets_import(fleet_slug="lanes", specs=specs).fleet
        live.watch(ViewScope(fleet))
        scheduler = InProcessScheduler([j for j in periodic_jobs() if j.name in wanted])
        scheduler.start()
        try:
            wait_until(lambda: stuck.is_set() or None, timeout=30, what="the live computation")
            before = ScrapeRun.objects.filter(endpoint__fleet=fleet).count()

            def three_more() -> bool | None:
                runs = ScrapeRun.objects.filter(endpoint__fleet=fleet, status="succeeded")
                return runs.count() >= before + 3 or None

            wait_until(three_more, timeout=30, what="three more scrape runs")
            assert scheduler.runs("publish-overviews") == 0  # still stuck all along
        finally:
            release.set()
            scheduler.stop()
    assert scheduler.runs("publish-overviews") >= 1  # and it finished once let go
