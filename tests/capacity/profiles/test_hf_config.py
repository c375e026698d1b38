from __future__ import annotations

import json
from typing import Any

import pytest

from capacity.profiles import ModelConfigError, ModelShape, parse_hf_config, weight_dtype_of

LLAMA_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 128256,
}


def test_llama_8b_config_gives_its_shape_and_an_8_03b_parameter_estimate() -> None:
    shape = parse_hf_config(json.dumps(LLAMA_8B))
    assert (shape.num_layers, shape.num_attention_heads, shape.num_kv_heads, shape.head_dim) == (
        32,
        32,
        8,
        128,
    )
    assert shape.attention == "GQA"
    assert shape.architecture == "LlamaForCausalLM"
    assert shape.max_position_embeddings == 131072
    assert shape.parameters.value == 8_030_261_248
    assert shape.parameters.origin == "model config"
    assert "3*h*I" in shape.parameters.source
    assert shape.source_of("num_kv_heads") == "config.json num_key_value_heads"
    assert weight_dtype_of(shape) == "bfloat16"


def test_tied_embeddings_drop_the_lm_head_from_the_estimate() -> None:
    tied = parse_hf_config({**LLAMA_8B, "tie_word_embeddings": True})
    assert tied.parameters.value == 8_030_261_248 - 128256 * 4096


def test_missing_kv_heads_default_to_multi_head_attention_and_say_so() -> None:
    config = {k: v for k, v in LLAMA_8B.items() if k != "num_key_value_heads"}
    shape = parse_hf_config(config)
    assert shape.num_kv_heads == 32 and shape.attention == "MHA"
    assert "MHA" in shape.source_of("num_kv_heads")
    assert any("multi-head attention assumed" in n for n in shape.notes)


def test_an_explicit_head_dim_wins_over_hidden_size_over_heads() -> None:
    assert parse_hf_config({**LLAMA_8B, "head_dim": 256}).head_dim == 256


def test_the_parameter_estimate_is_absent_when_a_field_it_needs_is_missing() -> None:
    shape = parse_hf_config({k: v for k, v in LLAMA_8B.items() if k != "intermediate_size"})
    assert shape.parameters.value is None
    assert shape.parameters.origin == "needs measurement"
    assert "intermediate_size" in shape.parameters.note


def test_moe_is_sized_for_kv_but_its_parameters_must_be_entered() -> None:
    shape = parse_hf_config({**LLAMA_8B, "num_local_experts": 8})
    assert shape.num_kv_heads == 8
    assert shape.parameters.value is None and "enter --params" in shape.parameters.note


def test_a_multimodal_config_reads_its_text_part_and_says_so() -> None:
    text = {k: v for k, v in LLAMA_8B.items() if k not in ("architectures", "torch_dtype")}
    shape = parse_hf_config(
        {
            "architectures": ["LlavaForConditionalGeneration"],
            "torch_dtype": "float16",
            "text_config": text,
        }
    )
    assert shape.num_layers == 32 and shape.dtype == "float16"
    assert shape.source_of("num_layers") == "config.json text_config.num_hidden_layers"
    assert any("text_config" in n for n in shape.notes)


def test_an_awq_config_gives_four_bit_weights_with_its_group_size() -> None:
    quant = {"quant_method": "awq", "bits": 4, "group_size": 64}
    shape = parse_hf_config({**LLAMA_8B, "quantization_config": quant})
    assert (shape.quant_method, shape.quant_bits, shape.quant_group_size) == ("awq", 4, 64)
    assert weight_dtype_of(shape) == "awq"


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"kv_lora_rank": 512, "q_lora_rank": 1536}, "kv_lora_rank"),
        ({"layer_types": ["full_attention", "mamba"]}, "layer_types"),
        ({"layer_types": ["sliding_attention", "full_attention"]}, "layer_types"),
        ({"attn_layer_period": 8}, "attn_layer_period"),
        ({"mamba_d_state": 16}, "mamba_d_state"),
        ({"ssm_cfg": {}}, "ssm_cfg"),
        ({"cross_attention_layers": [3, 8]}, "cross_attention_layers"),
        ({"is_encoder_decoder": True}, "is_encoder_decoder"),
        ({"sliding_window": 4096}, "sliding_window"),
    ],
)
def test_configs_the_formulas_do_not_cover_are_refused_naming_the_field(
    extra: dict[str, Any], field: str
) -> None:
    with pytest.raises(ModelConfigError) as caught:
        parse_hf_config({**LLAMA_8B, **extra})
    assert caught.value.field == field


def test_a_deepseek_v3_style_mla_config_is_refused_as_mla() -> None:
    deepseek = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "hidden_size": 7168,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "n_routed_experts": 256,
    }
    with pytest.raises(ModelConfigError, match=r"^kv_lora_rank: multi-head latent attention"):
        parse_hf_config(deepseek)


def test_a_sliding_window_switched_off_is_accepted() -> None:
    shape = parse_hf_config({**LLAMA_8B, "sliding_window": 131072, "use_sliding_window": False})
    assert shape.num_layers == 32


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers", "positive integer, got 0"),
        ({"num_hidden_layers": "many"}, "num_hidden_layers", "got 'many'"),
        ({"num_attention_heads": -4}, "num_attention_heads", "got -4"),
        ({"num_key_value_heads": 5}, "num_key_value_heads", "5 KV heads do not divide 32"),
        ({"head_dim": 0}, "head_dim", "got 0"),
        ({"hidden_size": 4001}, "hidden_size", "not divisible by num_attention_heads 32"),
        ({"num_hidden_layers": None}, "num_hidden_layers", "missing"),
    ],
)
def test_bad_shape_fields_name_the_field(change: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ModelConfigError, match=message) as caught:
        parse_hf_config({**LLAMA_8B, **change})
    assert caught.value.field == field


def test_unparseable_json_is_refused_as_config_json() -> None:
    with pytest.raises(ModelConfigError, match=r"^config.json: not valid JSON"):
        parse_hf_config("{not json")


def test_a_hand_entered_shape_is_validated_like_a_config() -> None:
    shape = ModelShape.entered(
        num_layers=80, num_kv_heads=8, head_dim=128, num_attention_heads=64, parameters=70.6e9
    )
    assert shape.origin == "entered" and shape.parameters.origin == "entered"
    with pytest.raises(ModelConfigError, match=r"^num_layers: must be a positive integer"):
        ModelShape.entered(num_layers=-1, num_kv_heads=8, head_dim=128)
    with pytest.raises(ModelConfigError, match="3 KV heads do not divide 64"):
        ModelShape.entered(num_layers=8, num_kv_heads=3, head_dim=128, num_attention_heads=64)


def test_overriding_a_config_field_records_that_it_was_entered() -> None:
    shape = parse_hf_config(LLAMA_8B).override(num_layers=16)
    assert shape.num_layers == 16 and shape.source_of("num_layers") == "entered (num_layers)"
    assert shape.source_of("head_dim").startswith("config.json")


def test_the_shape_as_figures_carries_units_and_where_each_came_from() -> None:
    figures = {q.key: q for q in parse_hf_config(LLAMA_8B).quantities()}
    assert figures["kv_heads_count"].value == 8 and figures["kv_heads_count"].unit == "heads"
    assert figures["head_dim_elements"].source == "config.json hidden_size / num_attention_heads"
    assert figures["layers_count"].origin == "model config"
