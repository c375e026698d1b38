"""The in-process scheduler of the embedded mode.

It runs the same periodic jobs as Celery beat (fleetscope.schedule), each on its own
timer, one daemon thread per lane (`PeriodicJob.lane`): jobs of one lane run one after
another, lanes side by side, so a live overview stuck on a slow Prometheus never holds up
the scrapes. A job that overruns its interval is not started again until it returns, so
a slow scrape never overlaps itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import close_old_connections
from django.utils.module_loading import import_string

from fleetscope.schedule import PeriodicJob

log = logging.getLogger(__name__)

# A job failing on every tick (the database down, say) logs its traceback once, then one
# line a minute while it keeps failing, and one when it works again: a log with a
# traceback per second hides the rest of what is going on.
REPEAT_LOG_SECONDS = 60.0


@dataclass
class _Slot:
    job: PeriodicJob
    function: Callable[[], object]
    next_run: float
    runs: int = 0
    failures: int = 0
    streak: int = 0  # failures in a row
    streak_since: float = 0.0
    logged_at: float = 0.0


@dataclass
class InProcessScheduler:
    jobs: list[PeriodicJob]
    clock: Callable[[], float] = time.monotonic
    resolve: Callable[[str], Callable[[], object]] = import_string
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _slots: list[_Slot] = field(default_factory=list)

    def __post_init__(self) -> None:
        now = self.clock()
        self._slots = [_Slot(job, self.resolve(job.function), now) for job in self.jobs]

    @property
    def lanes(self) -> list[str]:
        return list(dict.fromkeys(slot.job.lane for slot in self._slots))

    def _of(self, lane: str | None) -> list[_Slot]:
        return [slot for slot in self._slots if lane is None or slot.job.lane == lane]

    def run_due(self, lane: str | None = None) -> int:
        """Run every job of `lane` (of every lane: None) whose time has come, on this
        thread; return how many ran."""
        ran = 0
        for slot in self._of(lane):
            now = self.clock()
            if now < slot.next_run:
                continue
            started = now
            try:
                slot.function()
            except Exception as exc:
                # One failing job must not stop the others.
                self._failed(slot, exc, started)
            else:
                if slot.streak:
                    log.warning(
                        "periodic job %s works again after %d failures in a row over %.0f s",
                        slot.job.name, slot.streak, started - slot.streak_since,
                    )  # fmt: skip
                    slot.streak = 0
            finally:
                # Database connections opened by a job thread are not request-scoped.
                close_old_connections()
            slot.runs += 1
            ran += 1
            # Next run counts from the start, skipping ticks missed while the job overran.
            interval = slot.job.interval_seconds
            missed = max(0, int((self.clock() - started) // interval))
            slot.next_run = started + interval * (missed + 1)
        return ran

    def _failed(self, slot: _Slot, exc: Exception, at: float) -> None:
        """Called inside the `except`, so the first failure's traceback is the current one."""
        slot.failures += 1
        slot.streak += 1
        if slot.streak == 1:
            slot.streak_since = slot.logged_at = at
            log.exception("periodic job %s failed", slot.job.name)
        elif at - slot.logged_at >= REPEAT_LOG_SECONDS:
            slot.logged_at = at
            log.error(
                "periodic job %s still failing: %d times in a row over %.0f s, the last %s: %s",
                slot.job.name, slot.streak, at - slot.streak_since, type(exc).__name__,
                str(exc)[:300],
            )  # fmt: skip

    def runs(self, name: str) -> int:
        """How many times the job named `name` has run (and returned)."""
        return sum(slot.runs for slot in self._slots if slot.job.name == name)

    def seconds_until_next(self, lane: str | None = None) -> float:
        slots = self._of(lane)
        if not slots:
            return 1.0
        return max(0.0, min(slot.next_run for slot in slots) - self.clock())

    def start(self) -> None:
        for lane in self.lanes:
            thread = threading.Thread(
                target=self._loop, args=(lane,), name=f"fleetscope-scheduler-{lane}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every lane, waiting up to `timeout` in all: a lane stuck in a job is left
        to its daemon thread rather than holding up the shutdown."""
        self._stop.set()
        until = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, until - time.monotonic()))

    def _loop(self, lane: str) -> None:
        while not self._stop.is_set():
            self.run_due(lane)
            self._stop.wait(min(self.seconds_until_next(lane), 1.0))
