"""What a cost allocation returns: lines per (tenant, model), totals per tenant, a summary
per model and the reconciliation of both bases against the bill. Plain frozen dataclasses.

Two bases, side by side:

- allocation basis (`gpu_hours`, `gpu_cost_usd`, `cost_usd`): the whole bill of a model,
  idle included, split by output-token share within the model;
- usage basis (`usage_gpu_hours`, `usage_gpu_cost_usd`, `usage_cost_usd`): only the busy
  GPU-hours (busy fraction x GPU-hours) split by share; the idle rest is its own line.

Platform cost (`platform_cost_usd`) is split by output-token share across the fleet and is
the same on both bases. `None` is never zero: it means no price set, not measured, or not
derivable, and a `reason` or the report's notes say which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from slo.evaluation import Interval

LineKind = Literal["tenant", "unattributed", "idle"]
Basis = Literal["allocation", "usage"]
PriceStatus = Literal["priced", "partly priced", "not priced", "no price set"]
RELATIVE_TOLERANCE = 1e-9
PER_MILLION = 1_000_000.0


@dataclass(frozen=True)
class CostLine:
    """One tenant's use of one model, the unattributed usage of a model, or a model's idle."""

    tenant: str  # the tenant, "unattributed", or "idle"
    model_name: str  # "(platform)" for platform cost no output token could carry
    kind: LineKind
    reason: str  # why an unattributed / idle line exists; "" for a tenant line
    requests_ok: float | None  # None: not known (engine tokens the gateway did not see)
    requests_failed: float | None
    prompt_tokens: float | None
    output_tokens: float
    output_token_share: float | None  # of the model's output tokens; None for idle lines
    good_output_tokens: Interval | None  # None: the model's good fraction is unknown
    gpu_hours: float  # allocation basis
    usage_gpu_hours: float | None  # usage basis; None: busy fraction not measured
    gpu_cost_usd: float | None  # allocation basis; None: no price set
    usage_gpu_cost_usd: float | None
    platform_cost_usd: float | None  # None: no platform cost set
    cost_usd: float | None  # gpu_cost_usd + platform_cost_usd (allocation basis)
    usage_cost_usd: float | None  # usage_gpu_cost_usd + platform_cost_usd
    cost_per_million_good_output_tokens_usd: Interval | None
    usage_cost_per_million_good_output_tokens_usd: Interval | None
    cost_per_million_note: str  # why the figure is None, "" when it is known


@dataclass(frozen=True)
class TenantTotal:
    """A tenant's lines summed over models (also one for "unattributed")."""

    tenant: str
    model_names: tuple[str, ...]
    requests_ok: float | None
    requests_failed: float | None
    prompt_tokens: float | None
    output_tokens: float
    good_output_tokens: Interval | None
    gpu_hours: float
    usage_gpu_hours: float | None
    gpu_cost_usd: float | None
    usage_gpu_cost_usd: float | None
    platform_cost_usd: float | None
    cost_usd: float | None
    usage_cost_usd: float | None
    cost_per_million_good_output_tokens_usd: Interval | None
    usage_cost_per_million_good_output_tokens_usd: Interval | None
    cost_per_million_note: str


@dataclass(frozen=True)
class ModelSummary:
    """One model's bill and utilisation: the same GPU costs more per token when under-used."""

    model_name: str
    gpu_hours: float
    busy_fraction: float | None  # None: not measured
    busy_gpu_hours: float | None
    idle_gpu_hours: float | None
    price_per_gpu_hour_usd: float | None  # None: no price set
    gpu_bill_usd: float | None
    idle_cost_usd: float | None  # usage basis
    engine_output_tokens: float | None  # None: not read from the engines
    seen_output_tokens: float  # in the usage rows (the gateway's count, or the engines')
    unseen_output_tokens: float  # engine minus seen, when positive
    output_tokens: float  # seen + unseen: the denominator of the shares
    good_fraction: Interval | None
    good_output_tokens: Interval | None
    cost_per_million_good_output_tokens_usd: Interval | None
    usage_cost_per_million_good_output_tokens_usd: Interval | None
    cost_per_million_note: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Reconciliation:
    """Tenant costs + unattributed + idle against the bill, on one basis.

    Covers the models with a price (and, on the usage basis, a measured busy fraction) and
    the platform cost when one is set: `covers` says which.
    """

    basis: Basis
    bill_usd: float
    tenants_usd: float
    unattributed_usd: float
    idle_usd: float
    difference_usd: float  # tenants + unattributed + idle - bill
    ok: bool  # |difference| <= 1e-9 x bill (exactly 0 when the bill is 0)
    covers: str

    @classmethod
    def of(
        cls, basis: Basis, bill: float, parts: tuple[float, float, float], covers: str
    ) -> Reconciliation:
        tenants, unattributed, idle = parts
        difference = tenants + unattributed + idle - bill
        ok = abs(difference) <= RELATIVE_TOLERANCE * abs(bill)
        return cls(basis, bill, tenants, unattributed, idle, difference, ok, covers)


@dataclass(frozen=True)
class CostReport:
    period: str
    price_status: PriceStatus
    lines: tuple[CostLine, ...]
    tenants: tuple[TenantTotal, ...]  # tenants alphabetical, then "unattributed"
    models: tuple[ModelSummary, ...]
    gpu_hours: float
    gpu_bill_usd: float | None  # priced models only; None when none is priced
    platform_cost_usd: float | None
    bill_usd: float | None  # gpu_bill_usd + platform_cost_usd, what the reconciliation covers
    idle_cost_usd: float | None  # usage basis
    reconciliation: Reconciliation | None  # allocation basis
    usage_reconciliation: Reconciliation | None
    notes: tuple[str, ...]
    scope: str = ""  # the one tenant this view is cut to; "" for the whole fleet

    def tenant(self, name: str) -> TenantTotal | None:
        return next((t for t in self.tenants if t.tenant == name), None)

    def line(self, tenant: str, model_name: str, kind: LineKind = "tenant") -> CostLine | None:
        found = (
            ln
            for ln in self.lines
            if (ln.tenant, ln.model_name, ln.kind) == (tenant, model_name, kind)
        )
        return next(found, None)


def per_million(
    cost_usd: float | None, good: Interval | None, no_cost: str
) -> tuple[Interval | None, str]:
    """cost / good output tokens x 1e6 as an interval (the lower end divides by the upper
    good-token bound), or None with the reason; never a division by zero."""
    if cost_usd is None:
        return None, no_cost
    if good is None:
        return None, "good output tokens unknown: no good fraction for the model"
    if good.upper <= 0:
        return None, "no good output tokens in the period"
    if good.lower <= 0:
        return None, "good output tokens may be zero (lower bound 0): no upper bound on the cost"
    return Interval(cost_usd / good.upper * PER_MILLION, cost_usd / good.lower * PER_MILLION), ""


def add_intervals(intervals: list[Interval | None]) -> Interval | None:
    if not intervals or any(i is None for i in intervals):
        return None
    known = [i for i in intervals if i is not None]
    return Interval(sum(i.lower for i in known), sum(i.upper for i in known))


def add_known(values: list[float | None]) -> float | None:
    """The sum, or None when any part is unknown (a partial sum is never shown as whole)."""
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)
