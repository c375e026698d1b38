"""`CanaryPlan`: one single-variable canary as data (`to_dict`), as plain English for the
person on call (`text`) and as a YAML document for the change ticket (`yaml`).

A plan is advice. `applied` is always False and the text says so: FleetScope has no way
to touch a cluster, and a plan that looked applied would be a lie on an incident page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from triage.canary.types import (
    NEVER_APPLIED,
    BreachedObjective,
    CanaryScope,
    Duration,
    Gate,
    Knob,
    SampleSize,
)

CONTRACT_VERSION = 1


@dataclass(frozen=True)
class CanaryPlan:
    leaf: str  # the walk's supported leaf: "ttft.queue.kv_capacity"
    model_name: str | None
    canary: bool  # False: the fix is not a canary's to make (a dead replica is replaced)
    variable: Knob
    scope: CanaryScope
    objective: BreachedObjective
    sample: SampleSize | None
    duration: Duration | None
    compare: str  # what the canary's figures are compared with
    success_gates: tuple[Gate, ...]
    rollback: tuple[Gate, ...]
    quality_verified: bool
    red_flags: tuple[str, ...] = ()
    evidence: str = ""  # the leaf's own reason, so the plan says why this knob
    applied: bool = False

    def __post_init__(self) -> None:
        if self.applied:
            raise ValueError("CanaryPlan: FleetScope never applies a canary")
        object.__setattr__(self, "success_gates", tuple(self.success_gates))
        object.__setattr__(self, "rollback", tuple(self.rollback))
        object.__setattr__(self, "red_flags", tuple(self.red_flags))

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": CONTRACT_VERSION,
            "applied": self.applied,
            "notice": NEVER_APPLIED,
            "leaf": self.leaf,
            "model_name": self.model_name,
            "canary": self.canary,
            "variable": self.variable.to_dict(),
            "scope": self.scope.to_dict(),
            "objective": self.objective.to_dict(),
            "sample": self.sample.to_dict() if self.sample is not None else None,
            "duration": self.duration.to_dict() if self.duration is not None else None,
            "compare": self.compare,
            "success_gates": [g.to_dict() for g in self.success_gates],
            "rollback": [g.to_dict() for g in self.rollback],
            "quality_verified": self.quality_verified,
            "red_flags": list(self.red_flags),
            "evidence": self.evidence,
        }

    @property
    def text(self) -> str:
        model = self.model_name or "the fleet"
        knob = self.variable
        lines = [
            f"{'Canary' if self.canary else 'Plan'} for {self.leaf} on {model}.",
            NEVER_APPLIED,
            "",
            f"Why: {self.evidence}" if self.evidence else "",
            f"Breached objective: {self.objective.describe()}; the incident window had "
            f"{self.objective.observed_good * 100:.4g}%.",
            "",
            f"Change one thing ({knob.where}): {knob.action}",
            f"  {knob.name}: {knob.current} -> {knob.proposed}",
        ]
        if knob.current_note:
            lines.append(f"  Current value: {knob.current_note}")
        lines += ["", f"Scope: {self.scope.description}"]
        if self.scope.share_note:
            lines.append(f"  {self.scope.share_note}")
        if not self.canary:
            lines += ["", "No canary: nothing here is for FleetScope's users to trial."]
        if self.sample is not None:
            lines += [
                "",
                f"Sample: at least {self.sample.requests} requests on the canary.",
                f"  How: {self.sample.how}",
            ]
        if self.duration is not None:
            minutes = self.duration.minutes
            head = f"{minutes} minutes" if minutes is not None else "until the sample is in"
            lines += ["", f"Duration: {head}.", f"  How: {self.duration.how}"]
        lines += ["", f"Compare with: {self.compare}", "", "Success gates (all must hold):"]
        lines += [f"  - {g.rule}" for g in self.success_gates]
        if self.rollback:
            lines += ["", "Roll back if any of these holds:"]
            lines += [f"  - {g.rule}" for g in self.rollback]
        if self.red_flags:
            lines += ["", "Red flags:"]
            lines += [f"  - {flag}" for flag in self.red_flags]
        return "\n".join(line for i, line in enumerate(lines) if line or lines[i - 1]) + "\n"

    @property
    def yaml(self) -> str:
        # safe_dump quotes whatever YAML would read back as another type ("no", "1.0",
        # "--max-num-seqs: 256"), so every string round-trips as the same string.
        document = {"canary_plan": self.to_dict()}
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
