"""Everything a capacity review reads, each figure a `Quantity` with its origin.

Field names are the contract with `capacity.measured.fleet_inputs`, which returns
measured Quantities keyed by these names (see MEASURABLE_FIELDS).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from capacity.figures import Quantity, needs_measurement
from capacity.ledgers import RequestLengths
from capacity.profiles import GpuProfile, ModelShape

# Inputs a fleet's metrics can supply; everything else is entered or from a profile.
MEASURABLE_FIELDS = (
    "prompt_tokens_p50",
    "prompt_tokens_p95",
    "prompt_tokens_p99",
    "output_tokens_p50",
    "output_tokens_p95",
    "output_tokens_p99",
    "lambda_peak",
    "mu_good",
    "current_replicas",
    "cache_config",
    "prefill_seconds",
    "decode_seconds",
    "concurrency",
    "missing_metrics",
)


def _needs(key: str, unit: str) -> Any:
    return field(default_factory=lambda: needs_measurement(key, unit))


def length(kind: str, percentile: str, value: float | None, source: str = "entered") -> Quantity:
    key = f"{kind}_tokens_{percentile}"
    if value is None:
        return needs_measurement(key, "tokens")
    return Quantity(key, float(value), "tokens", "entered", source)


@dataclass(frozen=True)
class CacheConfig:
    """What `vllm:cache_config_info` says one replica allocated."""

    num_gpu_blocks: Quantity
    block_size: Quantity


@dataclass(frozen=True)
class CapacityInputs:
    shape: ModelShape
    weight_dtype: str
    kv_dtype: str
    usable_memory_bytes_per_gpu: Quantity
    tp: int = 1
    pp: int = 1
    gpu: GpuProfile | None = None
    gpus_per_node: Quantity = _needs("gpus_per_node_gpus", "gpus")
    gpu_memory_utilization: Quantity = field(
        default_factory=lambda: Quantity(
            "gpu_memory_utilization_fraction", 0.9, "fraction", "entered", "vLLM default"
        )
    )
    prompt_tokens_p50: Quantity = _needs("prompt_tokens_p50", "tokens")
    prompt_tokens_p95: Quantity = _needs("prompt_tokens_p95", "tokens")
    prompt_tokens_p99: Quantity = _needs("prompt_tokens_p99", "tokens")
    output_tokens_p50: Quantity = _needs("output_tokens_p50", "tokens")
    output_tokens_p95: Quantity = _needs("output_tokens_p95", "tokens")
    output_tokens_p99: Quantity = _needs("output_tokens_p99", "tokens")
    lambda_peak: Quantity = _needs("lambda_peak_requests_per_second", "requests_per_second")
    mu_good: Quantity = _needs("mu_good_requests_per_second", "requests_per_second")
    rho_target: Quantity = _needs("rho_target_fraction", "fraction")
    failure_reserve: Quantity = _needs("failure_reserve_replicas", "replicas")
    rollout_reserve: Quantity = field(
        default_factory=lambda: Quantity(
            "rollout_reserve_replicas", 0.0, "replicas", "entered", "default: no rollout surge"
        )
    )
    failure_domain_replicas: Quantity = field(
        default_factory=lambda: Quantity(
            "failure_domain_replicas", 1.0, "replicas", "entered", "default: one replica"
        )
    )
    current_replicas: Quantity | None = None
    cache_config: CacheConfig | None = None
    prefill_seconds: Quantity = _needs("prefill_seconds_per_request", "seconds")
    decode_seconds: Quantity = _needs("decode_seconds_per_request", "seconds")
    concurrency: Quantity = _needs("concurrency_requests", "requests")
    missing_metrics: tuple[str, ...] = ()
    other_bytes_per_rank: tuple[Quantity, ...] = ()  # entered activations, workspace, ...
    sources: tuple[tuple[str, str], ...] = ()  # free-form provenance for the text output

    def lengths(self) -> tuple[RequestLengths, ...]:
        return tuple(
            RequestLengths(
                p, getattr(self, f"prompt_tokens_{p}"), getattr(self, f"output_tokens_{p}")
            )
            for p in ("p50", "p95", "p99")
        )

    def with_measured(self, measured: Mapping[str, Any]) -> CapacityInputs:
        """Overlay what the fleet measured; unknown keys are refused, not dropped. An
        entered figure stays (a what-if), and an unmeasurable one does not erase a known one."""
        known = {f.name for f in fields(self)}
        changes: dict[str, Any] = {}
        for name, value in measured.items():
            if name not in known or name not in MEASURABLE_FIELDS:
                raise ValueError(f"fleet_inputs returned {name!r}, not a measurable input")
            if name == "cache_config" and isinstance(value, Mapping):
                value = CacheConfig(value["num_gpu_blocks"], value["block_size"])
            elif name == "missing_metrics":
                value = tuple(str(m) for m in value or ())
            current = getattr(self, name)
            if isinstance(current, Quantity) and current.origin == "entered" and current.known:
                continue  # an entered figure is a deliberate what-if: it wins
            unknown = isinstance(value, Quantity) and not value.known
            if unknown and isinstance(current, Quantity) and current.known:
                continue
            if value is not None:
                changes[name] = value
        return replace(self, **changes)
