"""Bytes per parameter and per KV element, by dtype and quantisation method.

Quantised formats store more than their nominal bits: every group of weights carries a
scale (and, for asymmetric formats, a zero point). That overhead is an explicit
allowance with its assumption written out, so a reviewer can replace it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Names people and config.json files use for the same storage width.
_ALIASES: dict[str, str] = {
    "float32": "fp32",
    "float": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float8": "fp8",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
    "w8a8": "int8",
    "w4a16": "int4",
}

WEIGHT_BYTES_PER_PARAMETER: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "awq": 0.5,
    "gptq": 0.5,
}

# Group-wise 4-bit formats: one fp16 scale and one 4-bit zero point per group.
GROUPED_FORMATS = frozenset({"int4", "awq", "gptq"})
DEFAULT_GROUP_SIZE = 128
SCALE_BITS = 16
ZERO_POINT_BITS = 4

KV_BYTES_PER_ELEMENT: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
}


def normalise_dtype(name: str) -> str:
    """`torch.bfloat16`, `BF16`, `bfloat16` -> `bf16`."""
    key = str(name).strip().lower().removeprefix("torch.")
    return _ALIASES.get(key, key)


@dataclass(frozen=True)
class WeightFormat:
    name: str
    bytes_per_parameter: float
    allowance_bytes_per_parameter: float  # scales and zero points; 0 for unquantised formats
    allowance_text: str

    @property
    def quantised(self) -> bool:
        return self.bytes_per_parameter < 2.0


def weight_format(dtype: str, group_size: int | None = None) -> WeightFormat:
    """The storage of one weight. Unknown names are refused, never defaulted to 2 bytes."""
    name = normalise_dtype(dtype)
    if name not in WEIGHT_BYTES_PER_PARAMETER:
        accepted = ", ".join(sorted(WEIGHT_BYTES_PER_PARAMETER))
        raise ValueError(f"unknown weight dtype {dtype!r}; accepted: {accepted}")
    width = WEIGHT_BYTES_PER_PARAMETER[name]
    if name in GROUPED_FORMATS:
        group = group_size or DEFAULT_GROUP_SIZE
        if group <= 0:
            raise ValueError(f"group size must be a positive integer, got {group_size!r}")
        bits = (SCALE_BITS + ZERO_POINT_BITS) / group
        text = (
            f"assumes group size {group}: one fp16 scale + one 4-bit zero point per {group} "
            f"weights = ({SCALE_BITS}+{ZERO_POINT_BITS})/{group} = {bits:.4f} bits per weight"
        )
        return WeightFormat(name, width, bits / 8, text)
    if width < 2.0:
        # Per-tensor or per-channel scales: one scale per output row, well under 0.1%.
        text = "assumes per-tensor or per-channel scales: allowance taken as 0 (below 0.1%)"
        return WeightFormat(name, width, 0.0, text)
    return WeightFormat(name, width, 0.0, "unquantised: no scales or zero points")


def kv_bytes_per_element(kv_dtype: str, model_dtype: str | None) -> tuple[float, str]:
    """Bytes per cached K or V element, and how it was decided.

    `auto` is vLLM's default: the cache takes the model's activation dtype, so a model
    quantised to 4-bit weights still caches KV in bf16.
    """
    name = normalise_dtype(kv_dtype)
    if name == "auto":
        if model_dtype is None:
            raise ValueError("kv dtype 'auto' needs the model dtype; enter --kv-dtype instead")
        resolved = normalise_dtype(model_dtype)
        if resolved not in KV_BYTES_PER_ELEMENT:
            accepted = ", ".join(sorted(KV_BYTES_PER_ELEMENT))
            raise ValueError(
                f"kv dtype 'auto' follows the model dtype {model_dtype!r}, which is not a "
                f"KV dtype; accepted: {accepted}"
            )
        return KV_BYTES_PER_ELEMENT[resolved], f"auto = model dtype {resolved}"
    if name not in KV_BYTES_PER_ELEMENT:
        accepted = ", ".join(["auto", *sorted(KV_BYTES_PER_ELEMENT)])
        raise ValueError(f"unknown kv dtype {kv_dtype!r}; accepted: {accepted}")
    return KV_BYTES_PER_ELEMENT[name], f"kv dtype {name}"
