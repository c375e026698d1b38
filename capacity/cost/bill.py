"""What one model's engines cost in a period, as the allocation takes it in: GPU-hours, the
price per GPU-hour (in USD, or none set), how busy they were, the output tokens they made
and the SLO's good fraction, each checked on the way in."""

from __future__ import annotations

from dataclasses import dataclass

from capacity.cost.tenants import CostInputError, checked_amount
from capacity.figures import Quantity
from slo.evaluation import Interval


def usd(quantity: Quantity | None, field: str) -> float | None:
    """A price or cost in USD: None when not set (or needs measurement), else >= 0."""
    if quantity is None or quantity.value is None:
        return None
    if not quantity.unit.lower().startswith("usd"):
        raise CostInputError(field, f"must be in USD, got unit {quantity.unit!r}")
    return checked_amount(quantity.value, field, quantity.key)


@dataclass(frozen=True)
class ModelBill:
    """What one model's engines cost in the period, and how busy they were."""

    model_name: str
    gpu_hours: float  # replicas x GPUs x hours
    busy_fraction: float | None  # e.g. mean DCGM_FI_DEV_GPU_UTIL / 100; None: not measured
    price_per_gpu_hour_usd: Quantity | None  # None (or value None): no price set
    engine_output_tokens: float | None  # all the engines produced; None: not read
    good_fraction: Interval | None  # from the SLO app's goodput; None: unknown
    # Why a price that is set cannot be applied (GPU-hours not measured, say); empty when
    # the model has no price because none was set.
    unpriced_reason: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.model_name, str) or not self.model_name:
            raise CostInputError("model_name", "must not be empty")
        where = f"model {self.model_name}"
        object.__setattr__(self, "gpu_hours", checked_amount(self.gpu_hours, "gpu_hours", where))
        if self.busy_fraction is not None:
            busy = checked_amount(self.busy_fraction, "busy_fraction", where)
            if busy > 1:
                raise CostInputError("busy_fraction", f"must be in [0, 1], got {busy} ({where})")
            object.__setattr__(self, "busy_fraction", busy)
        if self.engine_output_tokens is not None:
            tokens = checked_amount(self.engine_output_tokens, "engine_output_tokens", where)
            object.__setattr__(self, "engine_output_tokens", tokens)
        usd(self.price_per_gpu_hour_usd, "price_per_gpu_hour_usd")
        good = self.good_fraction
        if good is not None and not (good.lower >= 0 and good.upper <= 1):
            raise CostInputError("good_fraction", f"must lie in [0, 1], got {good} ({where})")

    @property
    def price_usd(self) -> float | None:
        return usd(self.price_per_gpu_hour_usd, "price_per_gpu_hour_usd")
