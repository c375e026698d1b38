"""Multi-window burn-rate alerting, as the SRE workbook sets it for a 30-day SLO, scaled to
the SLO's own window by keeping each pair's share of the budget.

A pair fires when the bad-event ratio over both its long and its short window exceeds
`factor * (1 - target)`: the long window proves the burn is real, the short one that it
is still going on. Low traffic cuts both ways, so there are two guards:

- no pair fires while its long window holds fewer than `min_requests_to_page` requests
  (three bad requests in an hour are not an outage);
- the slow rule raises a ticket when, over `SLOW_WINDOW_SECONDS`, at least
  `min_bad_events` events were bad and the burn exceeds the slowest pair's factor, with
  no request minimum (a trickle failing for days still gets seen).

Both the evaluation (`slo.evaluation`) and the exported Prometheus rules (`slo.rules`)
read these numbers, so the page and the alert agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["page", "ticket"]
DAY_SECONDS = 86_400.0
REFERENCE_WINDOW_DAYS = 30


@dataclass(frozen=True)
class BurnPair:
    long_seconds: float
    short_seconds: float
    budget_share: float  # of the whole window's budget, spent in `long_seconds`
    severity: Severity

    def factor(self, window_days: int) -> float:
        """The burn rate that spends `budget_share` of the budget in the long window:
        14.4 for the 1 h pair of a 30-day SLO, 13.44 for a 28-day one."""
        return self.budget_share * window_days * DAY_SECONDS / self.long_seconds

    def threshold(self, window_days: int, target: float) -> float:
        """The bad-event ratio above which this pair fires."""
        return self.factor(window_days) * (1.0 - target)

    @property
    def name(self) -> str:
        return f"{label(self.long_seconds)}/{label(self.short_seconds)}"


PAIRS: tuple[BurnPair, ...] = (
    BurnPair(3600.0, 300.0, 0.02, "page"),  # 14.4x on 30 days
    BurnPair(6 * 3600.0, 1800.0, 0.05, "page"),  # 6x
    BurnPair(DAY_SECONDS, 2 * 3600.0, 0.10, "ticket"),  # 3x
    BurnPair(3 * DAY_SECONDS, 6 * 3600.0, 0.10, "ticket"),  # 1x
)
SLOW_WINDOW_SECONDS = 3 * DAY_SECONDS
SLOW_PAIR = PAIRS[-1]
# Every window the pairs read, shortest first.
WINDOWS_SECONDS: tuple[float, ...] = tuple(
    sorted({seconds for pair in PAIRS for seconds in (pair.long_seconds, pair.short_seconds)})
)


def label(seconds: float) -> str:
    """`300` -> `5m`, `3600` -> `1h`, `86400` -> `1d` (Prometheus duration spelling)."""
    whole = int(seconds)
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"
