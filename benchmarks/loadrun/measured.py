"""What one measured period of the load benchmark holds: its bounds, every timing and
error it counted, and the run's totals."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Period:
    """The measured period: requests started inside it count."""

    start: float = float("inf")
    end: float = float("inf")
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def inside(self, moment: float) -> bool:
        return self.start <= moment < self.end


@dataclass
class Tally:
    loads: list[float] = field(default_factory=list)  # HTML + JSON, seconds
    html: list[float] = field(default_factory=list)
    json: list[float] = field(default_factory=list)
    handshakes: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    received: list[list[str]] = field(default_factory=list)  # per socket: push stamps
    probes: list[float] = field(default_factory=list)  # /healthz, every viewers.PROBE_SECONDS


@dataclass
class Run:
    viewers: int
    sockets: int
    seconds: float  # the measured period
    intervals: int
    tally: Tally
    requests: int
    queries_per_interval: float
    pushes_per_interval: list[float]  # per socket
    publishes: list[dict[str, Any]]
