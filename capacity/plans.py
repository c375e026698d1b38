"""A fleet's capacity plan for one model, turned into review inputs: the shape from its
model profile (the stored config.json when there is one), memory from its GPU profile,
policy as entered, and everything measurable from the fleet itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from capacity.figures import Origin, Quantity, entered
from capacity.measured import FleetMeasurements, fleet_measurements, measurements_as_inputs
from capacity.models import CapacityPlan, GpuProfile, ModelProfile
from capacity.profiles import ModelConfigError, ModelShape, parse_hf_config
from capacity.review import CapacityInputs, CapacityReview, capacity_review
from inventory.models import Fleet
from queries import Backend


@dataclass(frozen=True)
class PlanReview:
    fleet: Fleet
    model_name: str
    plan: CapacityPlan | None
    measurements: FleetMeasurements
    review: CapacityReview | None  # None: no plan yet, or a plan the formulas refuse
    problem: str = ""  # why there is no review


def profile_shape(profile: ModelProfile) -> ModelShape:
    """The stored config.json when the profile came from one, else the entered fields."""
    if profile.config:
        shape = parse_hf_config(profile.config)
        if profile.params and not shape.parameters.known:
            shape = shape.override(parameters=float(profile.params))
        return shape
    return ModelShape.entered(
        num_layers=profile.layers,
        num_kv_heads=profile.kv_heads,
        head_dim=profile.head_dim,
        num_attention_heads=profile.attention_heads,
        parameters=float(profile.params) if profile.params else None,
        dtype=profile.dtype,
        architecture=profile.architecture or None,
    )


def _usable(gpu: GpuProfile) -> Quantity:
    origin: Origin = "example" if gpu.example else "entered"
    source = f"GPU profile {gpu.name}" + (" (an example: replace it)" if gpu.example else "")
    return Quantity("usable_memory_bytes_per_gpu", float(gpu.usable_memory_bytes), "bytes",
                    origin, source, gpu.note)  # fmt: skip


def plan_inputs(plan: CapacityPlan, measured: FleetMeasurements) -> CapacityInputs:
    shape = profile_shape(plan.model_profile)
    where = f"capacity plan {plan}"
    fields: dict[str, Any] = {
        "shape": shape,
        "weight_dtype": plan.model_profile.dtype,
        "kv_dtype": plan.kv_dtype,
        "usable_memory_bytes_per_gpu": _usable(plan.gpu_profile),
        "tp": plan.tp,
        "pp": plan.pp,
        "gpus_per_node": entered("gpus_per_node_gpus", plan.gpu_profile.gpus_per_node, "gpus",
                                 f"GPU profile {plan.gpu_profile.name}"),
        "rho_target": entered("rho_target_fraction", plan.rho_target, "fraction", where),
        "failure_reserve": entered("failure_reserve_replicas", plan.failure_reserve,
                                   "replicas", where),
        "rollout_reserve": entered("rollout_reserve_replicas", plan.rollout_reserve,
                                   "replicas", where),
        "failure_domain_replicas": entered("failure_domain_replicas",
                                           plan.failure_domain_replicas, "replicas", where),
    }  # fmt: skip
    if plan.lambda_peak_requests_per_second is not None:
        fields["lambda_peak"] = entered(
            "lambda_peak_requests_per_second", plan.lambda_peak_requests_per_second,
            "requests_per_second", where,
        )  # fmt: skip
    if plan.mu_good_requests_per_second is not None:
        fields["mu_good"] = entered(
            "mu_good_requests_per_second", plan.mu_good_requests_per_second,
            "requests_per_second", where,
        )  # fmt: skip
    config = measured.cache_config
    if config is not None and config.gpu_memory_utilization is not None:
        fields["gpu_memory_utilization"] = Quantity(
            "gpu_memory_utilization_fraction", config.gpu_memory_utilization, "fraction",
            "measured", f"vllm:cache_config_info on {config.instance}",
        )  # fmt: skip
    return CapacityInputs(**fields).with_measured(measurements_as_inputs(measured))


def plan_review(
    fleet: Fleet, *, model_name: str, backend: Backend, at: datetime | None = None
) -> PlanReview:
    measured = fleet_measurements(fleet, model_name=model_name, backend=backend, at=at)
    plan = (
        CapacityPlan.objects.filter(fleet=fleet, model_name=model_name)
        .select_related("model_profile", "gpu_profile")
        .first()
    )
    if plan is None:
        return PlanReview(fleet, model_name, None, measured, None,
                          "no capacity plan for this model yet")  # fmt: skip
    try:
        review = capacity_review(plan_inputs(plan, measured))
    except (ModelConfigError, ValueError) as exc:
        return PlanReview(fleet, model_name, plan, measured, None, str(exc))
    return PlanReview(fleet, model_name, plan, measured, review)


__all__ = ["PlanReview", "plan_inputs", "plan_review", "profile_shape"]
