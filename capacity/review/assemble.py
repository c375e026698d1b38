"""One capacity review from its inputs: ledgers, the replica answer with N+1, what R_total
is most sensitive to, what would flip the design, sanity checks and classic mistakes."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from capacity.figures import Ledger, Quantity
from capacity.ledgers import (
    cache_config_check,
    check_count,
    check_rate,
    check_rho,
    kv_bytes_per_token_per_rank,
    kv_ledger,
    rank_memory,
    replicas_ledger,
    steady_unrounded,
    weights_ledger,
)
from capacity.profiles import kv_bytes_per_element, weight_format
from capacity.review import checks
from capacity.review.checks import Finding
from capacity.review.inputs import CapacityInputs

STEP = 0.10  # sensitivity: each input moved by +-10%


@dataclass(frozen=True)
class Sensitivity:
    input_key: str
    base_value: float
    change_minus_10_replicas: float
    change_plus_10_replicas: float
    r_total_minus_10_replicas: int
    r_total_plus_10_replicas: int

    @property
    def largest_change_replicas(self) -> float:
        return max(
            abs(self.change_minus_10_replicas),
            abs(self.change_plus_10_replicas),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "input": self.input_key,
            "base_value": self.base_value,
            "r_total_unrounded_change_minus_10_percent_replicas": self.change_minus_10_replicas,
            "r_total_unrounded_change_plus_10_percent_replicas": self.change_plus_10_replicas,
            "r_total_at_minus_10_percent_replicas": self.r_total_minus_10_replicas,
            "r_total_at_plus_10_percent_replicas": self.r_total_plus_10_replicas,
        }


@dataclass(frozen=True)
class CapacityReview:
    ledgers: tuple[Ledger, ...]
    r_total_replicas: int | None
    sensitivity: tuple[Sensitivity, ...]
    flips: tuple[Finding, ...]
    sanity_checks: tuple[Finding, ...]
    mistakes: tuple[Finding, ...]
    thresholds: tuple[tuple[str, float, str, str], ...]
    notes: tuple[str, ...] = ()

    def ledger(self, name: str) -> Ledger:
        return next(ledger for ledger in self.ledgers if ledger.name == name)

    def to_dict(self) -> dict[str, Any]:
        found = {
            "ledgers": [ledger_dict(ledger) for ledger in self.ledgers],
            "r_total_replicas": self.r_total_replicas,
            "sensitivity": [s.to_dict() for s in self.sensitivity],
            "flips": [f.to_dict() for f in self.flips],
            "sanity_checks": [f.to_dict() for f in self.sanity_checks],
            "mistakes": [f.to_dict() for f in self.mistakes],
            "thresholds": [
                {"name": n, "value": v, "unit": u, "reason": r} for n, v, u, r in self.thresholds
            ],
            "notes": list(self.notes),
        }
        return finite(found)


def ledger_dict(ledger: Ledger) -> dict[str, Any]:
    return {
        "name": ledger.name,
        "lower_bound": ledger.lower_bound,
        "lines": [
            {"label": ln.label, "formula": ln.formula, **ln.quantity.to_dict()}
            for ln in ledger.lines
        ],
        "notes": list(ledger.notes),
    }


def finite(value: Any) -> Any:
    """JSON never carries NaN or infinity: they become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def requirement(values: dict[str, float]) -> float:
    """R_total before rounding: the quantity the sensitivity ranks on."""
    return (
        steady_unrounded(
            values["lambda_peak_requests_per_second"],
            values["mu_good_requests_per_second"],
            values["rho_target_fraction"],
        )
        + values["failure_reserve_replicas"]
        + values["rollout_reserve_replicas"]
    )


def rounded_requirement(values: dict[str, float]) -> int:
    steady = steady_unrounded(
        values["lambda_peak_requests_per_second"],
        values["mu_good_requests_per_second"],
        values["rho_target_fraction"],
    )
    return (
        math.ceil(steady - 1e-9)
        + math.ceil(values["failure_reserve_replicas"] - 1e-9)
        + math.ceil(values["rollout_reserve_replicas"] - 1e-9)
    )


def sensitivity(
    base: dict[str, float],
    unrounded: Callable[[dict[str, float]], float] = requirement,
    rounded: Callable[[dict[str, float]], int] = rounded_requirement,
    top: int = 3,
) -> tuple[Sensitivity, ...]:
    """Move each input by -10% and +10%; rank by the larger move of the unrounded
    requirement (ties keep the inputs' order). rho_target is capped below 1."""
    at_base = unrounded(base)
    found = []
    for key, value in base.items():
        moved = []
        for factor in (1 - STEP, 1 + STEP):
            changed = value * factor
            if key == "rho_target_fraction":
                changed = min(changed, 0.999)
            moved.append({**base, key: changed})
        found.append(
            Sensitivity(
                key,
                value,
                unrounded(moved[0]) - at_base,
                unrounded(moved[1]) - at_base,
                rounded(moved[0]),
                rounded(moved[1]),
            )
        )
    ranked = sorted(found, key=lambda s: -s.largest_change_replicas)
    return tuple(ranked[:top])


def capacity_review(inputs: CapacityInputs) -> CapacityReview:
    fmt = weight_format(inputs.weight_dtype, inputs.shape.quant_group_size)
    b_kv, kv_source = kv_bytes_per_element(inputs.kv_dtype, inputs.shape.dtype)
    others = {q.key: q for q in inputs.other_bytes_per_rank}
    parameters = inputs.shape.parameters
    memory = rank_memory(parameters, fmt, inputs.tp, inputs.pp, inputs.shape, dict(others))
    weights = weights_ledger(
        parameters=parameters,
        weight_format=fmt,
        tp=inputs.tp,
        pp=inputs.pp,
        usable_memory_bytes_per_gpu=inputs.usable_memory_bytes_per_gpu,
        gpu_memory_utilization=inputs.gpu_memory_utilization,
        shape=inputs.shape,
        others=dict(others),
    )
    kv = kv_ledger(
        shape=inputs.shape,
        bytes_per_element=Quantity("kv_bytes_per_element", b_kv, "bytes", "derived", kv_source),
        tp=inputs.tp,
        pp=inputs.pp,
        lengths=inputs.lengths(),
        usable_memory_bytes_per_gpu=inputs.usable_memory_bytes_per_gpu,
        gpu_memory_utilization=inputs.gpu_memory_utilization,
        weights_bytes_per_rank=memory.weights_bytes_per_rank,
        other_bytes_per_rank=memory.other_bytes_per_rank,
    )
    pool = kv.get("kv_pool_bytes_per_replica")
    assert pool is not None
    per_rank, _ = kv_bytes_per_token_per_rank(inputs.shape, b_kv, inputs.tp, inputs.pp)
    cache = cache_config_check(
        num_gpu_blocks=inputs.cache_config.num_gpu_blocks if inputs.cache_config else None,
        block_size=inputs.cache_config.block_size if inputs.cache_config else None,
        kv_pool_bytes=pool,
        kv_stored_bytes_per_token=per_rank * inputs.tp * inputs.pp,
    )
    replicas = replicas_ledger(
        lambda_peak=inputs.lambda_peak,
        mu_good=inputs.mu_good,
        rho_target=inputs.rho_target,
        failure_reserve=inputs.failure_reserve,
        rollout_reserve=inputs.rollout_reserve,
        failure_domain_replicas=inputs.failure_domain_replicas,
        current_replicas=inputs.current_replicas,
    )
    total_q = replicas.get("r_total_replicas")
    total = int(total_q.value) if total_q and total_q.known and total_q.value is not None else None
    lam, mu, rho = (
        check_rate(inputs.lambda_peak),
        check_rate(inputs.mu_good),
        check_rho(inputs.rho_target),
    )
    failure, rollout = check_count(inputs.failure_reserve), check_count(inputs.rollout_reserve)
    ranked: tuple[Sensitivity, ...] = ()
    if lam and mu and rho and failure is not None and rollout is not None:
        ranked = sensitivity(
            {
                "lambda_peak_requests_per_second": lam,
                "mu_good_requests_per_second": mu,
                "rho_target_fraction": rho,
                "failure_reserve_replicas": float(failure),
                "rollout_reserve_replicas": float(rollout),
            }
        )
    p99 = kv.get("kv_bytes_per_request_p99")
    per_token = kv.get("kv_bytes_per_token")
    flips = (
        checks.weights_fit_node_flip(
            memory.weights_bytes,
            inputs.usable_memory_bytes_per_gpu,
            inputs.gpu_memory_utilization,
            inputs.gpus_per_node,
        ),
        checks.kv_p99_flip(
            p99 or Quantity("kv_bytes_per_request_p99", None, "bytes", "needs measurement"), pool
        ),
        checks.prefill_split_flip(inputs.prefill_seconds, inputs.decode_seconds),
    )
    sanity = (
        checks.doubling_context_check(
            float(per_token.value or 0) if per_token else 0.0, inputs.lengths()
        ),
        checks.more_replicas_check(total, lam, mu, rho),
    )
    found = checks.mistakes(
        lambda_peak=inputs.lambda_peak,
        concurrency=inputs.concurrency,
        usable_bytes_per_gpu=inputs.usable_memory_bytes_per_gpu,
        failure_reserve=inputs.failure_reserve,
        missing_metrics=inputs.missing_metrics,
    )
    notes = tuple(inputs.shape.notes)
    if inputs.gpu is not None:
        notes += (
            f"GPU profile {inputs.gpu.name} is an example: replace its usable memory "
            "and price with your own",
        )
    return CapacityReview(
        ledgers=(weights, kv, cache, replicas),
        r_total_replicas=total,
        sensitivity=ranked,
        flips=flips,
        sanity_checks=sanity,
        mistakes=found,
        thresholds=checks.THRESHOLDS,
        notes=notes,
    )
