"""Single-variable canaries for the triage walk's supported leaves: a plan (one knob, one
small scope, a sample size and duration, success and rollback gates; never applied) and
an evaluation of canary against control through the query seam.

    plan = canary_plan("tpot.preemption", node=node, model_name=..., replicas_in_model=4,
                       request_rate_per_second=12.0, breached=objective, quality_signal=False)
    plan.text, plan.yaml, plan.to_dict()
    canary_evaluate(fleet=fleet, model_name=..., canary_instances=(...),
                    control_instances=(...), objective=objective, start=..., end=...,
                    backend="local", min_requests=plan.sample.requests)
"""

from __future__ import annotations

from triage.canary.document import CanaryPlan
from triage.canary.evaluate import CanaryEvaluation, SideReading, canary_evaluate
from triage.canary.plan import SUPPORTED_LEAVES, canary_plan
from triage.canary.sample import duration, sample_size
from triage.canary.types import (
    BreachedObjective,
    CanaryScope,
    Duration,
    Gate,
    Knob,
    ObjectiveKindName,
    SampleSize,
)

__all__ = [
    "SUPPORTED_LEAVES",
    "BreachedObjective",
    "CanaryEvaluation",
    "CanaryPlan",
    "CanaryScope",
    "Duration",
    "Gate",
    "Knob",
    "ObjectiveKindName",
    "SampleSize",
    "SideReading",
    "canary_evaluate",
    "canary_plan",
    "duration",
    "sample_size",
]
