from __future__ import annotations

import pytest

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
