"""The in-process scheduler of the embedded mode.

It runs the same periodic jobs as Celery beat (fleetscope.schedule), each on its
own timer in one daemon thread. A job that overruns its interval is not started
again until it returns, so a slow scrape never overlaps itself.
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


@dataclass
class _Slot:
    job: PeriodicJob
    function: Callable[[], object]
    next_run: float
    runs: int = 0
    failures: int = 0


@dataclass
class InProcessScheduler:
    jobs: list[PeriodicJob]
    clock: Callable[[], float] = time.monotonic
    resolve: Callable[[str], Callable[[], object]] = import_string
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _slots: list[_Slot] = field(default_factory=list)

    def __post_init__(self) -> None:
        now = self.clock()
        self._slots = [_Slot(job, self.resolve(job.function), now) for job in self.jobs]

    def run_due(self) -> int:
        """Run every job whose time has come; return how many ran."""
        ran = 0
        for slot in self._slots:
            now = self.clock()
            if now < slot.next_run:
                continue
            started = now
            try:
                slot.function()
            except Exception:
                # One failing job must not stop the others; the traceback goes to the log.
                slot.failures += 1
                log.exception("periodic job %s failed", slot.job.name)
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

    def seconds_until_next(self) -> float:
        if not self._slots:
            return 1.0
        return max(0.0, min(slot.next_run for slot in self._slots) - self.clock())

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="fleetscope-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_due()
            self._stop.wait(min(self.seconds_until_next(), 1.0))
