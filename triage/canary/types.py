"""What a canary plan is made of: the breached objective, the one knob it turns, where,
for how many requests, and the gates that decide whether it stays or rolls back.

Every piece is a frozen dataclass with `to_dict()`; `CanaryPlan.to_dict()` is the JSON
contract the walk's `canary` field and incident exports carry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ObjectiveKindName = Literal["ttft", "itl", "tpot", "e2e", "success"]
ScopeKind = Literal["replica", "new_replica", "drain", "route", "gateway_instance"]

# The histogram each latency objective is read from (catalog keys, not metric names).
OBJECTIVE_KEYS: dict[str, str] = {
    "ttft": "ttft",
    "itl": "itl",
    "tpot": "request_tpot",
    "e2e": "e2e",
}
SUCCESS_KEY = "request_success"
DEFAULT_BAD_FINISH_REASONS = ("abort", "error")
NEVER_APPLIED = "FleetScope never applies this: a person decides and runs it."


@dataclass(frozen=True)
class BreachedObjective:
    """One SLO objective and what the incident window showed for it.

    `observed_good`: the fraction of requests (token gaps, for ITL) within the threshold
    (finished well, for success) in the incident window; below `target` means breached.
    """

    kind: ObjectiveKindName
    threshold_seconds: float | None
    target: float
    observed_good: float
    slo: str = ""  # "fleet/slug", for provenance
    bad_finish_reasons: tuple[str, ...] = DEFAULT_BAD_FINISH_REASONS

    def __post_init__(self) -> None:
        if self.kind not in (*OBJECTIVE_KEYS, "success"):
            raise ValueError(f"BreachedObjective: unknown kind {self.kind!r}")
        if not 0.0 < self.target < 1.0:
            raise ValueError(f"BreachedObjective: target must be within (0, 1), not {self.target}")
        if not 0.0 <= self.observed_good <= 1.0:
            raise ValueError(
                f"BreachedObjective: observed_good must be within [0, 1], not {self.observed_good}"
            )
        latency = self.kind != "success"
        if latency and not (self.threshold_seconds is not None and self.threshold_seconds > 0):
            raise ValueError(f"BreachedObjective: {self.kind} needs a positive threshold_seconds")
        if not latency and self.threshold_seconds is not None:
            raise ValueError("BreachedObjective: the success objective has no threshold")
        object.__setattr__(self, "bad_finish_reasons", tuple(self.bad_finish_reasons))

    @property
    def breached(self) -> bool:
        return self.observed_good < self.target

    @property
    def allowed_bad(self) -> float:
        return 1.0 - self.target

    @property
    def observed_bad(self) -> float:
        return 1.0 - self.observed_good

    @property
    def key(self) -> str:
        return OBJECTIVE_KEYS.get(self.kind, SUCCESS_KEY)

    @property
    def unit(self) -> str:
        return "token gaps" if self.kind == "itl" else "requests"

    def describe(self) -> str:
        """ "itl <= 0.025 s for 97% of token gaps", "success for 99.5% of requests"."""
        share = f"{self.target * 100:.4g}%"
        if self.threshold_seconds is None:
            reasons = " or ".join(self.bad_finish_reasons)
            return f"success (no {reasons} finish) for {share} of requests"
        return f"{self.kind} <= {self.threshold_seconds:g} s for {share} of {self.unit}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "threshold_seconds": self.threshold_seconds,
            "target": self.target,
            "observed_good": self.observed_good,
            "slo": self.slo,
            "bad_finish_reasons": list(self.bad_finish_reasons),
            "description": self.describe(),
        }


@dataclass(frozen=True)
class Knob:
    """The one variable a canary changes, from what to what."""

    name: str  # "--max-num-seqs", "replicas", "gateway retries"
    where: str  # "vLLM engine argument", "deployment", "gateway route"
    current: str
    proposed: str
    action: str  # one imperative sentence
    current_note: str = ""  # why `current` is a default to replace, when it is one

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "where": self.where,
            "current": self.current,
            "proposed": self.proposed,
            "action": self.action,
            "current_note": self.current_note,
        }


@dataclass(frozen=True)
class CanaryScope:
    """Where the change goes, and the share of the model's traffic the measurement sees."""

    kind: ScopeKind
    description: str
    share: float  # of the model's requests the canary's figures rest on, 0..1
    replicas: tuple[str, ...] = ()  # instances named by the walk, when it named them
    share_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "description": self.description,
            "share": round(self.share, 4),
            "share_note": self.share_note,
            "replicas": list(self.replicas),
        }


@dataclass(frozen=True)
class SampleSize:
    """Requests needed to tell the incident's bad fraction `p0` from the allowed `p1`."""

    requests: int
    p0: float
    p1: float
    alpha: float
    power: float
    z_alpha: float
    z_beta: float
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "p0": round(self.p0, 10),  # 1 - 0.963 is 0.03700000000000003 in floats
            "p1": round(self.p1, 10),
            "alpha": self.alpha,
            "power": self.power,
            "z_alpha": round(self.z_alpha, 4),
            "z_beta": round(self.z_beta, 4),
            "how": self.how,
        }


@dataclass(frozen=True)
class Duration:
    """How long the canary runs to collect its sample at the current traffic."""

    minutes: int | None  # None when the request rate is unknown
    request_rate_per_second: float | None
    share: float
    within_hour: bool  # False: too little traffic to finish within an hour
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "minutes": self.minutes,
            "request_rate_per_second": self.request_rate_per_second,
            "share": round(self.share, 4),
            "within_hour": self.within_hour,
            "how": self.how,
        }


@dataclass(frozen=True)
class Gate:
    """A success gate or a rollback criterion: a name and the rule in words."""

    name: str
    rule: str
    after_requests: int | None = None  # checked once the canary has this many requests

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rule": self.rule, "after_requests": self.after_requests}
