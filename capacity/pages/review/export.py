"""The capacity review as JSON (units in every key, no NaN) and the index's profile
rows."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from capacity.figures import bytes_text
from capacity.models import CapacityPlan, GpuProfile, ModelProfile
from capacity.pages.review.sections import measured_quantities
from capacity.plans import PlanReview


def plan_dict(plan: CapacityPlan) -> dict[str, Any]:
    gpu, profile = plan.gpu_profile, plan.model_profile
    price = float(gpu.price_per_hour_usd) if gpu.price_per_hour_usd is not None else None
    return {
        "model_profile": profile.name,
        "model_profile_origin": profile.origin,
        "gpu_profile": gpu.name,
        "gpu_profile_example": gpu.example,
        "gpu_usable_memory_bytes": gpu.usable_memory_bytes,
        "gpus_per_node_gpus": gpu.gpus_per_node,
        "gpu_price_usd_per_gpu_hour": price,
        "gpu_price_origin": "example" if gpu.example else "entered",
        "tp_ranks": plan.tp,
        "pp_stages": plan.pp,
        "kv_dtype": plan.kv_dtype,
        "rho_target_fraction": plan.rho_target,
        "failure_reserve_replicas": plan.failure_reserve,
        "rollout_reserve_replicas": plan.rollout_reserve,
        "failure_domain_replicas": plan.failure_domain_replicas,
        "lambda_peak_requests_per_second": plan.lambda_peak_requests_per_second,
        "mu_good_requests_per_second": plan.mu_good_requests_per_second,
    }


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def model_dict(item: PlanReview) -> dict[str, Any]:
    measured = {q.key: q.to_dict() for _, q in measured_quantities(item.measurements)}
    return _finite(
        {
            "model_name": item.model_name,
            "window": item.measurements.window,
            "plan": plan_dict(item.plan) if item.plan is not None else None,
            "problem": item.problem,
            "measured": measured,
            "missing_metrics": list(item.measurements.missing_metrics),
            "review": item.review.to_dict() if item.review is not None else None,
        }
    )


def fleet_dict(fleet_slug: str, backend: str, items: Sequence[PlanReview]) -> dict[str, Any]:
    return {
        "fleet": fleet_slug,
        "backend": backend,
        "window": items[0].measurements.window if items else None,
        "models": [model_dict(item) for item in items],
    }


@dataclass(frozen=True)
class ProfileRow:
    profile: ModelProfile
    params: str  # "8.03 billion", or "" when not known


@dataclass(frozen=True)
class GpuRow:
    gpu: GpuProfile
    usable: str  # "79.1 GiB"
    usable_exact: str  # "84,932,978,278 bytes"
    price: str  # "4.00", or "" when no price is set


def profile_rows(profiles: Iterable[ModelProfile]) -> list[ProfileRow]:
    return [ProfileRow(p, f"{p.params / 1e9:,.2f} billion" if p.params else "") for p in profiles]


def gpu_rows(gpus: Iterable[GpuProfile]) -> list[GpuRow]:
    return [
        GpuRow(
            g,
            bytes_text(float(g.usable_memory_bytes)),
            f"{g.usable_memory_bytes:,} bytes",
            f"{float(g.price_per_hour_usd):,.2f}" if g.price_per_hour_usd is not None else "",
        )
        for g in gpus
    ]
