"""GPU and model specifications, and the sizing rules derived from them.

Figures are public datasheet values (dense BF16 tensor peak, HBM bandwidth,
peer link bandwidth per direction, board power) and public model configs.
Everything the simulation needs about capacity is computed from these.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024**2
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class GpuSpec:
    key: str
    product: str  # DCGM `modelName`
    memory_mib: int
    bf16_flops: float
    hbm_bytes_per_s: float
    link_bytes_per_s: float  # NVLink, or PCIe when there is none
    link_latency_s: float
    tdp_watts: float
    idle_watts: float
    sm_clock_mhz: int
    mem_clock_mhz: int
    nvlink: bool
    pci_buses: tuple[str, ...]


GPUS: dict[str, GpuSpec] = {
    "H100": GpuSpec(
        "H100", "NVIDIA H100 80GB HBM3", 81559, 989e12, 3.35e12, 450e9, 8e-6,
        700.0, 72.0, 1980, 2619, True,
        ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"),
    ),
    "A100": GpuSpec(
        "A100", "NVIDIA A100-SXM4-80GB", 81920, 312e12, 2.039e12, 300e9, 10e-6,
        400.0, 55.0, 1410, 1593, True,
        ("07", "0F", "47", "4E", "87", "90", "B7", "BD"),
    ),
    "L40S": GpuSpec(
        "L40S", "NVIDIA L40S", 46068, 362e12, 864e9, 32e9, 25e-6,
        350.0, 35.0, 2520, 9001, False,
        ("01", "25", "41", "61", "81", "A1", "C1", "E1"),
    ),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ModelSpec:
    path: str  # the Hugging Face id, which vLLM reports when no served name is given
    served_name: str
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    params: float
    quality: float  # share of the golden set this model answers correctly

    @property
    def weight_bytes(self) -> float:
        return self.params * 2.0  # BF16 weights

    def kv_bytes_per_token(self, kv_dtype_bytes: int) -> int:
        """The reference formula: 2 (K and V) x layers x KV heads x head dim x bytes."""
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_dtype_bytes


MODELS: dict[str, ModelSpec] = {
    "llama-3.1-8b-instruct": ModelSpec(
        "meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct",
        32, 4096, 8, 128, 8.03e9, 0.86,
    ),
    "llama-3.1-70b-instruct": ModelSpec(
        "meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b-instruct",
        80, 8192, 8, 128, 70.6e9, 0.94,
    ),
    "qwen2.5-7b-instruct": ModelSpec(
        "Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct",
        28, 3584, 4, 128, 7.62e9, 0.84,
    ),
}  # fmt: skip

KV_DTYPE_BYTES = {"auto": 2, "fp8": 1}

# Memory vLLM keeps outside the KV cache besides the weights: CUDA context and
# non-torch allocations, CUDA graphs, and the activation peak of a full-budget step.
_FIXED_RESERVE_BYTES = 1.6 * GIB
_ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN = 24


def kv_capacity_tokens(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    tp: int,
    gpu_memory_utilization: float,
    kv_dtype: str,
    max_num_batched_tokens: int,
) -> int:
    """KV-cache size in tokens for one engine (a TP group), or 0 if the weights don't fit."""
    budget = gpu.memory_mib * MIB * gpu_memory_utilization
    activations = max_num_batched_tokens * model.hidden * _ACTIVATION_BYTES_PER_TOKEN_PER_HIDDEN
    per_gpu_free = budget - model.weight_bytes / tp - _FIXED_RESERVE_BYTES - activations
    if per_gpu_free <= 0:
        return 0
    # Each TP rank holds kv_heads / tp of every layer's KV.
    return int(per_gpu_free * tp // model.kv_bytes_per_token(KV_DTYPE_BYTES[kv_dtype]))


def smallest_tp(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    max_model_len: int,
    gpu_memory_utilization: float,
    kv_dtype: str,
    max_num_batched_tokens: int,
) -> int:
    """The smallest power-of-two TP size whose KV cache holds a few full-length sequences."""
    for tp in (1, 2, 4, 8):
        tokens = kv_capacity_tokens(
            model,
            gpu,
            tp=tp,
            gpu_memory_utilization=gpu_memory_utilization,
            kv_dtype=kv_dtype,
            max_num_batched_tokens=max_num_batched_tokens,
        )
        if tokens >= 8 * max_model_len:
            return tp
    raise ValueError(f"{model.served_name} does not fit on 8 x {gpu.product}")


def buckets_125(max_value: int) -> list[float]:
    """vLLM's 1-2-5 series up to and including `max_value` (token-count histograms)."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > max_value:
                return out
            out.append(float(value))
        exponent += 1
