"""A model profile from a pasted Hugging Face `config.json`: parsed and checked by the same
code the review uses, so a profile the formulas would refuse (MLA, sliding windows, hybrid
layers) is never stored."""

from __future__ import annotations

import json

from capacity.models import ModelProfile
from capacity.profiles import ModelConfigError, parse_hf_config, weight_dtype_of, weight_format
from capacity.profiles.dtypes import normalise_dtype


def model_profile_from_config(
    *, name: str, config_text: str | bytes, params: int | None = None
) -> ModelProfile:
    """Create the profile `name` from `config_text`. Raises ModelConfigError naming the
    config field the formulas cannot use, or ValidationError from the model's own checks
    (a name already taken, say); nothing is saved then."""
    shape = parse_hf_config(config_text)
    if params is not None and params <= 0:
        raise ModelConfigError("params", f"must be a positive parameter count, got {params!r}")
    dtype = weight_dtype_of(shape)
    if not dtype:
        field = "quantization_config" if shape.quant_method else "torch_dtype"
        raise ModelConfigError(
            field, "gives no weight dtype the formulas know; enter the profile in the admin"
        )
    try:
        weight_format(dtype, shape.quant_group_size)
    except ValueError as exc:
        raise ModelConfigError("torch_dtype", str(exc)) from None
    if params is None and shape.parameters.known and shape.parameters.value is not None:
        params = int(shape.parameters.value)
    profile = ModelProfile(
        name=name.strip(),
        architecture=(shape.architecture or "")[:200],
        params=params,
        dtype=normalise_dtype(dtype),
        layers=shape.num_layers,
        attention_heads=shape.num_attention_heads,
        kv_heads=shape.num_kv_heads,
        head_dim=shape.head_dim,
        origin=ModelProfile.Origin.CONFIG,
        config=_config_dict(config_text),
    )
    profile.full_clean()
    profile.save()
    return profile


def _config_dict(config_text: str | bytes) -> dict[str, object]:
    parsed = json.loads(config_text)
    assert isinstance(parsed, dict)  # parse_hf_config accepted it: a JSON object
    return parsed
