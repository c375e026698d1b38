"""SLO evaluation: attainment (a value or an interval), error budget, multi-window burn,
goodput and state for each SLO of a fleet, with the provenance of every figure.

    from slo.evaluation import slo_statuses
    statuses = slo_statuses(fleet, backend="local")
"""

from __future__ import annotations

from slo.evaluation.figures import (
    STATE_COLOURS,
    STATE_LABELS,
    STATE_ORDER,
    BurnRow,
    Goodput,
    HourlyAttainment,
    Interval,
    ObjectiveStatus,
    Provenance,
    ReplicaAttainment,
    ReplicaGoodRate,
    SloStatus,
    SlowRule,
    State,
    Verdict,
    WindowBurn,
    duration_text,
)
from slo.evaluation.status import slo_status, slo_statuses

__all__ = [
    "STATE_COLOURS",
    "STATE_LABELS",
    "STATE_ORDER",
    "BurnRow",
    "Goodput",
    "HourlyAttainment",
    "Interval",
    "ObjectiveStatus",
    "Provenance",
    "ReplicaAttainment",
    "ReplicaGoodRate",
    "SloStatus",
    "SlowRule",
    "State",
    "Verdict",
    "WindowBurn",
    "duration_text",
    "slo_status",
    "slo_statuses",
]
