"""What a query returns, whichever backend ran it.

"Missing is not zero": a key the fleet does not expose, a histogram that cannot
be trusted, or a series with no samples comes back as `unavailable` with the
reason, never as a flat line at 0. NaN and infinities become None (a gap), so
the JSON a page receives is always valid (`JSON.parse` rejects bare `NaN`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Status = Literal["ok", "partial", "unavailable", "error"]

# Where a ResultSeries keeps its float array: an instance attribute outside the dataclass
# fields, so equality, repr and the constructor stay as they are.
_FLOATS = "_floats"


def finite_or_none(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class ResultSeries:
    """One series on the window's step grid: `values[i]` is None where there is no value.

    A quantile from buckets also carries the bucket each value fell in: `lower[i]` and
    `upper[i]`. Past the last finite edge there is no value, only a lower bound:
    `values[i]` and `upper[i]` are None and `lower[i]` is the edge it exceeds.
    """

    labels: Mapping[str, str]
    timestamps: tuple[float, ...]
    values: tuple[float | None, ...]
    lower: tuple[float | None, ...] | None = None
    upper: tuple[float | None, ...] | None = None

    def __post_init__(self) -> None:
        if len(self.timestamps) != len(self.values):
            raise ValueError("ResultSeries: timestamps and values differ in length")
        object.__setattr__(self, "labels", dict(self.labels))
        object.__setattr__(self, "values", tuple(finite_or_none(v) for v in self.values))
        for side in ("lower", "upper"):
            bound = getattr(self, side)
            if bound is not None:
                if len(bound) != len(self.values):
                    raise ValueError(f"ResultSeries: {side} and values differ in length")
                object.__setattr__(self, side, tuple(finite_or_none(v) for v in bound))

    @classmethod
    def from_points(
        cls, labels: Mapping[str, str], grid: Iterable[float], points: Mapping[float, float]
    ) -> ResultSeries:
        """Spread sparse (timestamp -> value) points over `grid`, gaps as None."""
        stamps = tuple(grid)
        return cls(labels, stamps, tuple(points.get(t) for t in stamps))

    @classmethod
    def from_array(
        cls,
        labels: Mapping[str, str],
        grid: tuple[float, ...],
        values: np.ndarray,
        *,
        bounds: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> ResultSeries:
        """From a float array on `grid` (NaN or infinite = gap), cleaned in one numpy pass:
        the per-value check of the constructor dominated an overview's conversion time.
        `bounds`: the (lower, upper) edges of each value's bucket, for quantiles."""
        array = np.asarray(values, dtype=float)
        if array.shape != (len(grid),):
            raise ValueError("ResultSeries: timestamps and values differ in length")
        finite = np.isfinite(array)
        # A copy either way: the caller may reuse its array, and `floats` keeps this one.
        if finite.all():
            floats = array.copy()
            cleaned = floats.tolist()
        else:
            floats = np.where(finite, array, np.nan)
            cleaned = floats.tolist()
            for gap in np.flatnonzero(~finite).tolist():
                cleaned[gap] = None
        series = object.__new__(cls)
        object.__setattr__(series, "labels", dict(labels))
        object.__setattr__(series, "timestamps", grid)
        object.__setattr__(series, "values", tuple(cleaned))
        lower = upper = None
        if bounds is not None:
            lower, upper = (_cleaned(np.asarray(side, dtype=float)) for side in bounds)
        object.__setattr__(series, "lower", lower)
        object.__setattr__(series, "upper", upper)
        _keep_floats(series, floats)
        return series

    @property
    def floats(self) -> np.ndarray:
        """`values` as a read-only float64 array, NaN where there is no value (built once:
        figures and heatmaps work on whole columns)."""
        cached: np.ndarray | None = self.__dict__.get(_FLOATS)
        if cached is None:
            # dtype=float turns None into NaN; values are already finite or None.
            cached = _keep_floats(self, np.array(self.values, dtype=float))
        return cached

    def __getstate__(self) -> dict[str, Any]:
        # Pickles and copies hold the data once; the float view is rebuilt on first use.
        return {k: v for k, v in self.__dict__.items() if k != _FLOATS}

    @property
    def present(self) -> list[float]:
        return [v for v in self.values if v is not None]

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "labels": dict(self.labels),
            "timestamps": list(self.timestamps),
            "values": list(self.values),
        }
        if self.lower is not None and self.upper is not None:
            found["lower"] = list(self.lower)
            found["upper"] = list(self.upper)
        return found


def _cleaned(array: np.ndarray) -> tuple[float | None, ...]:
    return tuple(float(v) if np.isfinite(v) else None for v in array.tolist())


def _keep_floats(series: ResultSeries, floats: np.ndarray) -> np.ndarray:
    floats.flags.writeable = False  # shared by every reader of the series
    object.__setattr__(series, _FLOATS, floats)
    return floats


@dataclass(frozen=True)
class QueryResult:
    """`status`: ok, partial (data shown, but incomplete: say so), unavailable (no data,
    `message` says why), error (the backend failed; `reason` names how).

    `reason` is a short machine word (`not-exposed`, `flag-gated`, `removed`,
    `not-in-vllm`, `no-data`, `bad-histogram`, `prometheus-unavailable`,
    `timeout`, `deadline` (the page's overall deadline passed first), `bad-query`,
    `server-error`, `bad-answer`, `no-prometheus`), empty when ok.
    `resolved_name` is the real metric name read (the numerator's for a Ratio).
    """

    status: Status
    series: tuple[ResultSeries, ...] = ()
    reason: str = ""
    resolved_name: str | None = None
    message: str = ""
    warnings: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "series", tuple(self.series))
        object.__setattr__(self, "warnings", tuple(self.warnings))

    @property
    def has_data(self) -> bool:
        return self.status in ("ok", "partial")

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "resolved_name": self.resolved_name,
            "message": self.message,
            "warnings": list(self.warnings),
            "series": [s.to_dict() for s in self.series],
        }

    def to_json(self) -> str:
        # allow_nan=False: a stray non-finite number is a bug here, not invalid JSON on a page.
        return json.dumps(self.to_dict(), allow_nan=False, separators=(",", ":"))


def unavailable(reason: str, message: str, resolved_name: str | None = None) -> QueryResult:
    return QueryResult("unavailable", (), reason, resolved_name, message)


def failed(reason: str, message: str, resolved_name: str | None = None) -> QueryResult:
    return QueryResult("error", (), reason, resolved_name, message)
