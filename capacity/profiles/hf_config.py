"""A model's shape from its Hugging Face `config.json`, or entered by hand.

Only what the KV and weight formulas cover is accepted. Attention variants whose cache
is not `2 x L x H_kv x D_head` per token (MLA, sliding windows, hybrid state-space
layers, cross-attention) are refused with the field that shows them, rather than sized
with a formula that would be wrong by a large factor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from capacity.figures import Origin, Quantity, needs_measurement

FULL_ATTENTION = frozenset({"full_attention", "attention", "global_attention", "global"})

PARAMETER_FORMULA = (
    "V*h (embedding) + L*(h*(H_q*D) + 2*h*(H_kv*D) + (H_q*D)*h [attention q,k,v,o] "
    "+ 3*h*I [gated MLP] + 2*h [norms]) + h [final norm] + V*h [lm_head, unless tied]"
)


class ModelConfigError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class ModelShape:
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    parameters: Quantity  # parameters_count; "needs measurement" when it cannot be estimated
    origin: Origin = "model config"
    architecture: str | None = None
    hidden_size: int | None = None
    intermediate_size: int | None = None
    vocab_size: int | None = None
    max_position_embeddings: int | None = None
    dtype: str | None = None
    quant_method: str | None = None
    quant_bits: int | None = None
    quant_group_size: int | None = None
    tie_word_embeddings: bool = False
    num_experts: int | None = None
    sources: tuple[tuple[str, str], ...] = ()  # field -> where it came from
    notes: tuple[str, ...] = field(default=())

    def source_of(self, name: str) -> str:
        return dict(self.sources).get(name, self.origin)

    @property
    def attention(self) -> str:
        if self.num_kv_heads == self.num_attention_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    def quantities(self) -> tuple[Quantity, ...]:
        """The shape as figures, each with where it came from."""

        def q(key: str, unit: str, name: str) -> Quantity:
            source = self.source_of(name)
            origin: Origin = "entered" if source.startswith("entered") else self.origin
            return Quantity(key, float(getattr(self, name)), unit, origin, source)

        return (
            q("layers_count", "layers", "num_layers"),
            q("attention_heads_count", "heads", "num_attention_heads"),
            q("kv_heads_count", "heads", "num_kv_heads"),
            q("head_dim_elements", "elements", "head_dim"),
        )

    def override(self, **entered: Any) -> ModelShape:
        """Replace fields with hand-entered values (command-line flags), re-validated."""
        given = {k: v for k, v in entered.items() if v is not None}
        if not given:
            return self
        for name in ("num_layers", "num_attention_heads", "num_kv_heads", "head_dim"):
            if name in given:
                given[name] = _positive_int(name, given[name])
        sources = dict(self.sources)
        sources.update({k: f"entered ({k})" for k in given})
        shape = replace(self, **given, sources=tuple(sources.items()))
        _check_heads(shape.num_attention_heads, shape.num_kv_heads, "num_kv_heads")
        return shape

    @classmethod
    def entered(
        cls,
        *,
        num_layers: Any,
        num_kv_heads: Any,
        head_dim: Any,
        num_attention_heads: Any = None,
        parameters: float | None = None,
        dtype: str | None = None,
        architecture: str | None = None,
    ) -> ModelShape:
        """A shape typed in by hand, with the same validation as a config file."""
        layers = _positive_int("num_layers", num_layers)
        kv_heads = _positive_int("num_kv_heads", num_kv_heads)
        dim = _positive_int("head_dim", head_dim)
        heads = kv_heads
        notes: list[str] = []
        if num_attention_heads is None:
            notes.append("attention heads not entered: taken equal to the KV heads")
        else:
            heads = _positive_int("num_attention_heads", num_attention_heads)
        _check_heads(heads, kv_heads, "num_kv_heads")
        if parameters is None:
            params = needs_measurement("parameters_count", "parameters", note="enter --params")
        else:
            if not isinstance(parameters, int | float) or not parameters > 0:
                raise ModelConfigError("parameters", f"must be positive, got {parameters!r}")
            params = Quantity("parameters_count", float(parameters), "parameters", "entered")
        names = ("num_layers", "num_attention_heads", "num_kv_heads", "head_dim")
        return cls(
            num_layers=layers,
            num_attention_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=dim,
            parameters=params,
            origin="entered",
            architecture=architecture,
            dtype=dtype,
            sources=tuple(
                (
                    n,
                    "default: num_kv_heads (not entered)"
                    if n == "num_attention_heads" and num_attention_heads is None
                    else f"entered ({n})",
                )
                for n in names
            ),  # fmt: skip
            notes=tuple(notes),
        )


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ModelConfigError(name, f"must be a positive integer, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise ModelConfigError(name, f"must be a positive integer, got {value!r}") from None
    if not number.is_integer() or number <= 0:
        raise ModelConfigError(name, f"must be a positive integer, got {value!r}")
    return int(number)


def _check_heads(heads: int, kv_heads: int, field: str = "num_key_value_heads") -> None:
    if kv_heads > heads or heads % kv_heads:
        raise ModelConfigError(
            field,
            f"{kv_heads} KV heads do not divide {heads} attention heads",
        )


def _refuse_uncovered(cfg: Mapping[str, Any]) -> None:
    if cfg.get("kv_lora_rank") is not None:
        raise ModelConfigError(
            "kv_lora_rank",
            "multi-head latent attention (MLA) caches a compressed latent, not 2 x H_kv x "
            "D_head per layer: the KV formula does not cover it",
        )
    if cfg.get("is_encoder_decoder") is True:
        raise ModelConfigError("is_encoder_decoder", "encoder-decoder models are not covered")
    if cfg.get("cross_attention_layers"):
        raise ModelConfigError(
            "cross_attention_layers", "cross-attention layers cache encoder states: not covered"
        )
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list):
        kinds = {str(t).lower() for t in layer_types}
        if any("sliding" in k for k in kinds):
            raise ModelConfigError(
                "layer_types", "sliding-window layers cap their cache at the window: not covered"
            )
        other = sorted(kinds - FULL_ATTENTION)
        if other:
            raise ModelConfigError(
                "layer_types", f"hybrid layers {other} keep state, not a KV cache: not covered"
            )
    for key in sorted(cfg):
        if key in ("attn_layer_period", "attn_layer_offset") or key.startswith(("mamba_", "ssm_")):
            raise ModelConfigError(key, "hybrid state-space layers are not covered")
    if cfg.get("sliding_window") is not None and cfg.get("use_sliding_window") is not False:
        raise ModelConfigError(
            "sliding_window", "sliding-window attention caps the cache at the window: not covered"
        )


def _optional_int(cfg: Mapping[str, Any], name: str) -> int | None:
    return _positive_int(name, cfg[name]) if cfg.get(name) is not None else None


def estimate_parameters(shape: ModelShape) -> Quantity:
    """Dense decoder-only count from the shape; unknown when any term is missing."""
    h, i, v = shape.hidden_size, shape.intermediate_size, shape.vocab_size
    if shape.num_experts is not None and shape.num_experts > 1:
        return needs_measurement(
            "parameters_count",
            "parameters",
            note=f"mixture of experts ({shape.num_experts} experts): the dense estimate does "
            "not apply, enter --params",
        )
    if h is None or i is None or v is None:
        missing = [
            n
            for n, x in (("hidden_size", h), ("intermediate_size", i), ("vocab_size", v))
            if x is None
        ]
        return needs_measurement(
            "parameters_count",
            "parameters",
            note=f"not estimated: config lacks {', '.join(missing)}; enter --params",
        )
    q_width = shape.num_attention_heads * shape.head_dim
    kv_width = shape.num_kv_heads * shape.head_dim
    per_layer = h * q_width + 2 * h * kv_width + q_width * h + 3 * h * i + 2 * h
    total = v * h + shape.num_layers * per_layer + h + (0 if shape.tie_word_embeddings else v * h)
    return Quantity(
        "parameters_count",
        float(total),
        "parameters",
        "model config",
        "estimated from config.json: " + PARAMETER_FORMULA,
        note="biases ignored; lm_head tied" if shape.tie_word_embeddings else "biases ignored",
    )


def parse_hf_config(config: Mapping[str, Any] | str | bytes) -> ModelShape:
    """A `config.json` (text or parsed) -> ModelShape, or ModelConfigError naming the field."""
    if isinstance(config, str | bytes):
        try:
            config = json.loads(config)
        except ValueError as exc:
            raise ModelConfigError("config.json", f"not valid JSON ({exc})") from None
    if not isinstance(config, Mapping):
        raise ModelConfigError("config.json", "must be a JSON object")
    top: Mapping[str, Any] = config
    cfg: Mapping[str, Any] = top
    notes: list[str] = []
    prefix = ""
    if isinstance(top.get("text_config"), Mapping):
        cfg = {**{k: v for k, v in top.items() if k != "text_config"}, **top["text_config"]}
        prefix = "text_config."
        notes.append(
            "multimodal config: read the text model (text_config); the vision encoder's "
            "weights are not counted"
        )
    _refuse_uncovered(cfg)
    sources: dict[str, str] = {}

    def need(name: str, key: str) -> int:
        if cfg.get(key) is None:
            raise ModelConfigError(key, "missing from config.json")
        sources[name] = f"config.json {prefix}{key}"
        return _positive_int(key, cfg[key])

    layers = need("num_layers", "num_hidden_layers")
    heads = need("num_attention_heads", "num_attention_heads")
    if cfg.get("num_key_value_heads") is None:
        kv_heads = heads
        sources["num_kv_heads"] = "default: num_attention_heads (MHA)"
        notes.append("num_key_value_heads absent: multi-head attention assumed (H_kv = H_q)")
    else:
        kv_heads = need("num_kv_heads", "num_key_value_heads")
    _check_heads(heads, kv_heads)
    hidden = _optional_int(cfg, "hidden_size")
    if cfg.get("head_dim") is not None:
        head_dim = need("head_dim", "head_dim")
    elif hidden is None:
        raise ModelConfigError("head_dim", "missing, and no hidden_size to derive it from")
    elif hidden % heads:
        raise ModelConfigError(
            "hidden_size", f"{hidden} is not divisible by num_attention_heads {heads}"
        )
    else:
        head_dim = hidden // heads
        sources["head_dim"] = f"config.json {prefix}hidden_size / num_attention_heads"
    quant = cfg.get("quantization_config")
    quant = quant if isinstance(quant, Mapping) else {}
    bits = quant.get("bits", quant.get("weight_bits"))
    experts = cfg.get("num_local_experts", cfg.get("num_experts"))
    archs = top.get("architectures") or cfg.get("architectures") or []
    dtype = top.get("torch_dtype") or top.get("dtype") or cfg.get("torch_dtype")
    shape = ModelShape(
        num_layers=layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        parameters=needs_measurement("parameters_count", "parameters"),
        architecture=str(archs[0]) if archs else cfg.get("model_type"),
        hidden_size=hidden,
        intermediate_size=_optional_int(cfg, "intermediate_size"),
        vocab_size=_optional_int(cfg, "vocab_size"),
        max_position_embeddings=_optional_int(cfg, "max_position_embeddings"),
        dtype=str(dtype) if dtype else None,
        quant_method=str(quant["quant_method"]) if quant.get("quant_method") else None,
        quant_bits=_positive_int("quantization_config.bits", bits) if bits else None,
        quant_group_size=int(quant["group_size"]) if quant.get("group_size") else None,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        num_experts=_positive_int("num_experts", experts) if experts is not None else None,
        sources=tuple(sources.items()),
        notes=tuple(notes),
    )
    if shape.num_experts is not None and shape.num_experts > 1:
        notes.append("mixture of experts: KV is sized as usual, the parameter count is entered")
    return replace(shape, parameters=estimate_parameters(shape), notes=tuple(notes))


def weight_dtype_of(shape: ModelShape) -> str | None:
    """The weight storage the config implies, or None when it must be entered."""
    method = (shape.quant_method or "").lower()
    if not method:
        return shape.dtype
    if method in ("awq", "gptq") and shape.quant_bits in (4, 8):
        return method if shape.quant_bits == 4 else "int8"
    if method == "fp8":
        return "fp8"
    return None
