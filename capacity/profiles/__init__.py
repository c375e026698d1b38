"""Model shapes, dtypes and GPU profiles: the inputs the ledgers read."""

from __future__ import annotations

from capacity.profiles.dtypes import WeightFormat, kv_bytes_per_element, weight_format
from capacity.profiles.gpus import GPU_PROFILES, GpuProfile, gpu_profile, nameplate_memory_flag
from capacity.profiles.hf_config import (
    ModelConfigError,
    ModelShape,
    estimate_parameters,
    parse_hf_config,
    weight_dtype_of,
)

__all__ = [
    "GPU_PROFILES",
    "GpuProfile",
    "ModelConfigError",
    "ModelShape",
    "WeightFormat",
    "estimate_parameters",
    "gpu_profile",
    "kv_bytes_per_element",
    "nameplate_memory_flag",
    "parse_hf_config",
    "weight_dtype_of",
    "weight_format",
]
