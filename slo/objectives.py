"""What each objective kind reads: the catalog key, what one event is, and its unit.

Latency objectives count observations of a histogram at or under a threshold; the
success objective counts finishes of `request_success` by `finished_reason`. ITL counts
inter-token gaps, not requests, so it has no place in per-request goodput.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectiveKindInfo:
    kind: str
    key: str  # catalog key (inventory.catalog)
    label: str
    events: str  # what one counted event is, for the page
    per_request: bool


OBJECTIVE_KINDS: Mapping[str, ObjectiveKindInfo] = {
    info.kind: info
    for info in (
        ObjectiveKindInfo("ttft", "ttft", "TTFT", "requests", True),
        ObjectiveKindInfo("itl", "itl", "ITL", "token gaps", False),
        ObjectiveKindInfo("tpot", "request_tpot", "TPOT per request", "requests", True),
        ObjectiveKindInfo("e2e", "e2e", "E2E latency", "requests", True),
        ObjectiveKindInfo("success", "request_success", "success ratio", "requests", True),
    )
}
LATENCY_KINDS = tuple(kind for kind in OBJECTIVE_KINDS if kind != "success")
# Catalog values of vLLM's finished_reason (reference: request_success_total).
FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
# Thresholds beyond a day are a unit mistake (milliseconds typed as seconds), not an SLO.
MAX_THRESHOLD_SECONDS = 86_400.0
