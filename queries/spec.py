"""Typed query specs: what a panel, SLO or triage node asks for, in terms of catalog keys.

    Rate("generation_tokens", by=("model_name",), window_seconds=60)
    Quantile("ttft", 0.95, by=("model_name",))
    Ratio(Rate("request_success", match={"finished_reason": "abort"}), Rate("request_success"))

A spec never holds a metric name or a PromQL string: the inventory resolves the
key to what the fleet really exposes, then a backend runs it. Specs validate
themselves against the catalog when built, so a typo fails in the panel's code,
not on the page. Nothing here imports Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal, TypeAlias

from fleetscope.lib.utc import unix_millis
from inventory.catalog import CATALOG

if TYPE_CHECKING:  # spec stays importable without Django set up
    from inventory.models import Fleet

# The labels a query may group by; anything else is a cardinality or tenancy risk.
GROUP_LABELS = frozenset(
    {
        "model_name",
        "instance",
        "engine",
        "finished_reason",
        "tenant",
        "reason",
        "source",
        "le",
        "status",  # http_requests_total: 2xx / 4xx / 5xx only
        "result",  # the golden-set prober's checks: pass / fail
        "gpu",  # DCGM's GPU index on its node: at most 8 or so per exporter instance
    }
)
# Prometheus refuses range queries with more points per series than this (reliability D26).
MAX_POINTS_PER_SERIES = 11_000
# Rate windows default to Prometheus' lookback: long enough for a 1 m scrape interval.
DEFAULT_WINDOW_SECONDS = 300.0
LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Agg = Literal["sum", "avg", "max", "min"]


def _check_key(key: str, allowed: frozenset[str], spec: str) -> None:
    entry = CATALOG.get(key)
    if entry is None:
        raise ValueError(f"{spec}: unknown catalog key {key!r}")
    if entry.type not in allowed:
        raise ValueError(f"{spec}: {key!r} is a {entry.type}, {spec} needs {' or '.join(allowed)}")


def _check_by(by: tuple[str, ...], spec: str) -> None:
    unknown = [label for label in by if label not in GROUP_LABELS]
    if unknown:
        raise ValueError(f"{spec}: cannot group by {unknown}; allowed: {sorted(GROUP_LABELS)}")


def _check_window(window_seconds: float, spec: str) -> None:
    if not (math.isfinite(window_seconds) and window_seconds > 0):
        raise ValueError(f"{spec}: window_seconds must be positive, not {window_seconds}")


def _freeze_match(spec: object, match: Mapping[str, str] | tuple[tuple[str, str], ...]) -> None:
    """Store `match` as sorted pairs so the frozen spec stays hashable and comparable."""
    pairs = tuple(sorted(dict(match).items()))
    for name, value in pairs:
        if not LABEL_NAME.fullmatch(name) or name == "__name__":
            raise ValueError(f"{type(spec).__name__}: {name[:40]!r} is not a label name")
        if not isinstance(value, str):
            raise ValueError(f"{type(spec).__name__}: match values are strings, got {value!r}")
    object.__setattr__(spec, "match", pairs)


@dataclass(frozen=True)
class Rate:
    """Per-second rate of a counter, summed by `by`.

    For a histogram key it is the rate of observations (`_count`), or of
    `_bucket` when `by` contains `le` (heatmaps). `match` keeps only series
    whose labels equal the given values.
    """

    key: str
    by: tuple[str, ...] = ()
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    match: Mapping[str, str] | tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        _check_key(self.key, frozenset({"counter", "histogram"}), type(self).__name__)
        _check_by(tuple(self.by), type(self).__name__)
        _check_window(self.window_seconds, type(self).__name__)
        object.__setattr__(self, "by", tuple(self.by))
        _freeze_match(self, self.match)


@dataclass(frozen=True)
class Increase(Rate):
    """Increase of a counter over `window_seconds` (rate times the window, as Prometheus does)."""


def _check_histogram(spec: Quantile | Mean | FractionBelow) -> None:
    name = type(spec).__name__
    _check_key(spec.key, frozenset({"histogram"}), name)
    _check_by(tuple(spec.by), name)
    if "le" in spec.by:
        raise ValueError(f"{name}: `le` is consumed by the histogram maths; use Rate for heatmaps")
    _check_window(spec.window_seconds, name)
    object.__setattr__(spec, "by", tuple(spec.by))
    _freeze_match(spec, spec.match)


@dataclass(frozen=True)
class Quantile:
    """`histogram_quantile(q, ...)`: linear interpolation inside the bucket holding rank q."""

    key: str
    q: float
    by: tuple[str, ...] = ()
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    match: Mapping[str, str] | tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        if not 0.0 <= self.q <= 1.0:
            raise ValueError(f"Quantile: q must be within [0, 1], not {self.q}")
        _check_histogram(self)


@dataclass(frozen=True)
class Mean:
    """Mean observation over the window: rate of `_sum` over rate of `_count`."""

    key: str
    by: tuple[str, ...] = ()
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    match: Mapping[str, str] | tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        _check_histogram(self)


@dataclass(frozen=True)
class FractionBelow:
    """Fraction of observations <= `le` over the window.

    `le` should be a bucket edge every scoped endpoint exposes. When it is not,
    the result carries a warning and two series per group, labelled
    `bound="lower"` and `bound="upper"`: the fractions at the nearest edges
    below and above `le`, which bracket the true value (the lower one is left
    out when `le` is under the first edge).
    """

    key: str
    le: float
    by: tuple[str, ...] = ()
    window_seconds: float = DEFAULT_WINDOW_SECONDS
    match: Mapping[str, str] | tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "le", float(self.le))
        if not math.isfinite(self.le):
            raise ValueError(f"FractionBelow: le must be a finite edge, not {self.le}")
        _check_histogram(self)


@dataclass(frozen=True)
class Gauge:
    """A gauge's latest value (5 min lookback, stale series left out), aggregated by `by`."""

    key: str
    agg: Agg = "sum"
    by: tuple[str, ...] = ()
    match: Mapping[str, str] | tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        _check_key(self.key, frozenset({"gauge", "info"}), "Gauge")
        if self.agg not in ("sum", "avg", "max", "min"):
            raise ValueError(f"Gauge: agg must be sum, avg, max or min, not {self.agg!r}")
        _check_by(tuple(self.by), "Gauge")
        object.__setattr__(self, "by", tuple(self.by))
        _freeze_match(self, self.match)


@dataclass(frozen=True)
class Ratio:
    """numerator / denominator, matched on identical label sets (so both need the same `by`)."""

    numerator: Spec
    denominator: Spec

    def __post_init__(self) -> None:
        if spec_by(self.numerator) != spec_by(self.denominator):
            raise ValueError("Ratio: numerator and denominator must group by the same labels")

    @property
    def by(self) -> tuple[str, ...]:
        return spec_by(self.numerator)


Spec: TypeAlias = Rate | Increase | Quantile | Mean | FractionBelow | Gauge | Ratio


def spec_by(spec: Spec) -> tuple[str, ...]:
    return spec.by


def spec_leaves(spec: Spec) -> tuple[Rate | Quantile | Mean | FractionBelow | Gauge, ...]:
    """The specs a spec is made of (a Ratio's two sides, recursively), numerator first."""
    if isinstance(spec, Ratio):
        return spec_leaves(spec.numerator) + spec_leaves(spec.denominator)
    return (spec,)


def spec_keys(spec: Spec) -> tuple[str, ...]:
    """Every catalog key a spec reads, numerator first."""
    if isinstance(spec, Ratio):
        return spec_keys(spec.numerator) + spec_keys(spec.denominator)
    return (spec.key,)


@dataclass(frozen=True)
class Window:
    """A query range: UTC-aware `start` and `end`, one point every `step_seconds`."""

    start: datetime
    end: datetime
    step_seconds: float

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if value.tzinfo is None:
                raise ValueError(f"Window.{name} must be timezone-aware (UTC), got {value}")
            object.__setattr__(self, name, value.astimezone(UTC))
        if self.end < self.start:
            raise ValueError("Window: end is before start")
        if not (math.isfinite(self.step_seconds) and self.step_seconds > 0):
            raise ValueError(f"Window: step_seconds must be positive, not {self.step_seconds}")

    @property
    def points(self) -> int:
        return int((self.end - self.start).total_seconds() // self.step_seconds) + 1

    def bounded(self, max_points: int = MAX_POINTS_PER_SERIES) -> Window:
        """This window, with the step widened (to whole milliseconds) so no series has
        more than `max_points` points; unchanged when it already fits."""
        if self.points <= max_points:
            return self
        span_ms = round((self.end - self.start).total_seconds() * 1000)
        step_ms = -(-span_ms // (max_points - 1))  # ceiling division
        return Window(self.start, self.end, step_ms / 1000)

    def timestamps(self) -> list[float]:
        """Evaluation times in unix seconds (millisecond precision, as Prometheus uses)."""
        start_ms = unix_millis(self.start.timestamp())
        step_ms = unix_millis(self.step_seconds)
        return [(start_ms + k * step_ms) / 1000 for k in range(self.points)]

    def widened_by(self, seconds: float) -> tuple[datetime, datetime]:
        """The span of samples needed to evaluate this window with a range or lookback."""
        return self.start - timedelta(seconds=seconds), self.end


@dataclass(frozen=True)
class Scope:
    """Which part of a fleet a query covers: all of it, one model, or some replicas.

    `instances` are host:port strings, as Prometheus' `instance` label has them.
    """

    fleet: Fleet
    model_name: str | None = None
    instances: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.instances is not None:
            object.__setattr__(self, "instances", tuple(self.instances))
