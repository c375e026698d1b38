"""A Llama-3.1-70B review on four 80 GB cards, the inputs most tests start from."""

from __future__ import annotations

from typing import Any

from capacity.figures import GIB, Quantity
from capacity.profiles import ModelShape
from capacity.review import CapacityInputs, length


def entered(key: str, value: float, unit: str) -> Quantity:
    return Quantity(key, value, unit, "entered", "test")


def llama_70b_inputs(**changes: Any) -> CapacityInputs:
    shape = ModelShape.entered(
        num_layers=80,
        num_kv_heads=8,
        head_dim=128,
        num_attention_heads=64,
        parameters=70.6e9,
        dtype="bf16",
    )
    fields: dict[str, Any] = {
        "shape": shape,
        "weight_dtype": "bf16",
        "kv_dtype": "auto",
        "usable_memory_bytes_per_gpu": entered("usable_memory_bytes_per_gpu", 79.1 * GIB, "bytes"),
        "tp": 4,
        "gpus_per_node": entered("gpus_per_node_gpus", 8, "gpus"),
        "prompt_tokens_p50": length("prompt", "p50", 1000),
        "output_tokens_p50": length("output", "p50", 200),
        "prompt_tokens_p99": length("prompt", "p99", 4000),
        "output_tokens_p99": length("output", "p99", 1000),
        "lambda_peak": entered("lambda_peak_requests_per_second", 20, "requests_per_second"),
        "mu_good": entered("mu_good_requests_per_second", 2.5, "requests_per_second"),
        "rho_target": entered("rho_target_fraction", 0.7, "fraction"),
        "failure_reserve": entered("failure_reserve_replicas", 1, "replicas"),
    }
    fields.update(changes)
    return CapacityInputs(**fields)
