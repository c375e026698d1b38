"""One overall deadline for the Prometheus queries behind a page or a live computation.

Each query has its own timeout (PROMETHEUS_TIMEOUT_SECONDS), but a page sends many, 8 at a
time: against a Prometheus taking 30 s a query, an overview waited 60-70 s. A batch now
waits at most until its deadline, keeps what came back, and turns the rest into a failed
result that says so. Inside `page_deadline()` every batch shares the page's deadline (an
overview for one replica runs two); outside one, each batch gets its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from django.conf import settings

# A request still out at the deadline is cut off this much later by its own (capped)
# timeout: the batch has already moved on, this only ends the thread and Prometheus' work.
GRACE_SECONDS = 1.0


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic()
    seconds: float  # as configured, for the message

    @classmethod
    def starting_now(cls, seconds: float | None = None) -> Deadline:
        if seconds is None:
            seconds = float(settings.PROMETHEUS_BATCH_DEADLINE_SECONDS)
        return cls(time.monotonic() + seconds, seconds)

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def request_timeout(self, configured: float) -> float:
        """A request's timeout: its own, but never far past the deadline."""
        return max(0.1, min(configured, self.remaining() + GRACE_SECONDS))

    @property
    def message(self) -> str:
        return f"Prometheus did not answer within the page's {self.seconds:g} s deadline"


_current: ContextVar[Deadline | None] = ContextVar("fleetscope_page_deadline", default=None)


@contextmanager
def page_deadline(seconds: float | None = None) -> Iterator[Deadline]:
    """Every batch inside shares one deadline; an inner page keeps its outer page's."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    deadline = Deadline.starting_now(seconds)
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def batch_deadline() -> Deadline:
    """The page's deadline, or one starting now for a batch outside any page."""
    return _current.get() or Deadline.starting_now()
