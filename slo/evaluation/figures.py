"""What an SLO evaluation returns: every figure as a value or an interval, with where it
came from. Plain dataclasses, so the pages, `slo_status --json` and the tests read the
same thing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Verdict = Literal["met", "breached", "undecided", "no-data"]
State = Literal["ok", "at-risk", "burning", "exhausted", "undecided", "no-data"]
Firing = Literal["firing", "maybe", "quiet", "too-few", "no-data"]

# Worst first: an SLO shows the worst state of its objectives that have data.
STATE_ORDER: tuple[State, ...] = ("exhausted", "burning", "at-risk", "undecided", "ok", "no-data")
# One meaning per colour across the product (the same CSS classes as panel states).
STATE_COLOURS: Mapping[State, str] = {
    "exhausted": "bad",
    "burning": "bad",
    "at-risk": "warn",
    "undecided": "warn",
    "ok": "good",
    "no-data": "none",
}
STATE_LABELS: Mapping[State, str] = {
    "exhausted": "budget exhausted",
    "burning": "burning (page)",
    "at-risk": "at risk (ticket)",
    "undecided": "undecided: the interval straddles the target",
    "ok": "ok",
    "no-data": "no data",
}


def duration_text(seconds: float) -> str:
    """A span as FleetScope words it, in three significant figures: 45 min, 1.5 h, 5 d."""
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86_400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86_400:.3g} d"


@dataclass(frozen=True)
class Interval:
    """A figure that is either exact (`lower == upper`) or known only to lie in between."""

    lower: float
    upper: float

    def __post_init__(self) -> None:
        if math.isnan(self.lower) or math.isnan(self.upper) or self.lower > self.upper:
            raise ValueError(f"Interval: bad bounds {self.lower}..{self.upper}")

    @classmethod
    def exact(cls, value: float) -> Interval:
        return cls(value, value)

    @property
    def is_exact(self) -> bool:
        return self.lower == self.upper

    @property
    def value(self) -> float | None:
        return self.lower if self.is_exact else None

    def scaled(self, factor: float) -> Interval:
        low, high = self.lower * factor, self.upper * factor
        return Interval(min(low, high), max(low, high))

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "lower": self.lower, "upper": self.upper}


def verdict_of(attainment: Interval | None, target: float) -> Verdict:
    """met or breached only when the whole interval is on one side of the target."""
    if attainment is None:
        return "no-data"
    if attainment.lower >= target:
        return "met"
    if attainment.upper < target:
        return "breached"
    return "undecided"


@dataclass(frozen=True)
class Provenance:
    """Where a figure came from: enough to recompute it by hand."""

    backend: str  # "local" (the embedded store) or "prometheus"
    window: str  # e.g. "2026-11-28T10:00Z .. 2026-12-01T10:00Z (3 d)"
    metric_names: tuple[str, ...]
    edges_used: tuple[float, ...] = ()  # the shared bucket edges the fractions read
    events: float | None = None
    queries: tuple[str, ...] = ()  # PromQL, when the backend is Prometheus
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplicaAttainment:
    instance: str
    attainment: Interval | None
    events: float
    verdict: Verdict


@dataclass(frozen=True)
class WindowBurn:
    seconds: float
    label: str
    events: float | None
    bad_ratio: Interval | None
    burn: Interval | None  # bad ratio over the allowed bad ratio (1 - target)


@dataclass(frozen=True)
class BurnRow:
    pair: str  # "1h/5m"
    severity: str  # page or ticket
    factor: float  # burn rate that fires it, scaled to the SLO window
    long: WindowBurn
    short: WindowBurn
    firing: Firing
    note: str


@dataclass(frozen=True)
class SlowRule:
    """The low-traffic ticket: bad events piling up over days, whatever the volume."""

    window_label: str
    bad_events: Interval | None
    min_bad_events: int
    factor: float
    firing: Firing
    note: str


@dataclass(frozen=True)
class HourlyAttainment:
    timestamps: tuple[float, ...]  # end of each hour, unix seconds
    lower: tuple[float | None, ...]
    upper: tuple[float | None, ...]
    events: tuple[float | None, ...]
    budget_lower: tuple[float | None, ...] = ()  # budget remaining after each hour
    budget_upper: tuple[float | None, ...] = ()


@dataclass(frozen=True)
class ObjectiveStatus:
    kind: str
    label: str
    threshold_seconds: float | None
    target: float
    events_name: str  # "requests" or "token gaps"
    attainment: Interval | None
    verdict: Verdict
    reason: str  # how precise the attainment is, and why
    events: float | None
    bad_events: Interval | None
    budget_remaining: Interval | None  # fraction of the window's error budget left
    exhaustion_seconds: float | None  # earliest, at the last day's burn; None: not at this rate
    state: State
    burn: tuple[BurnRow, ...]
    slow: SlowRule | None
    replicas: tuple[ReplicaAttainment, ...]
    hourly: HourlyAttainment | None
    provenance: Provenance
    unavailable: str = ""  # why there is nothing to show, when there is nothing


@dataclass(frozen=True)
class ReplicaGoodRate:
    instance: str
    mu_good: float | None  # good requests per second, sustained while busy and within SLO
    intervals: tuple[str, ...]  # the hours it came from
    note: str


@dataclass(frozen=True)
class Goodput:
    fraction: Interval | None  # of finished requests meeting every per-request objective
    requests_per_second: Interval | None
    good_output_tokens_per_second: Interval | None
    exact: bool
    objectives: tuple[str, ...]  # the per-request objectives it combines
    left_out: tuple[str, ...]  # objectives it cannot combine, with why
    note: str
    replicas: tuple[ReplicaGoodRate, ...] = ()


@dataclass(frozen=True)
class SloStatus:
    slo_id: int
    fleet: str
    slug: str
    name: str
    window_days: int
    held_seconds: float
    window_note: str
    backend: str
    at: float  # evaluation time, unix seconds
    state: State
    objectives: tuple[ObjectiveStatus, ...]
    goodput: Goodput | None
    budget_remaining: Interval | None  # the lowest of the objectives'
    worst_objective: str | None
    owner: str = ""
    runbook_url: str = ""
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return _plain(asdict(self))


def _plain(value: Any) -> Any:
    """asdict, with infinities and NaN as None: the JSON must parse anywhere."""
    if isinstance(value, dict):
        plain = {k: _plain(v) for k, v in value.items()}
        if plain.keys() == {"lower", "upper"}:  # an Interval: say whether it is exact
            plain["value"] = plain["lower"] if plain["lower"] == plain["upper"] else None
        return plain
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
