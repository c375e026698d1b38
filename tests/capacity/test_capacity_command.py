from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

LLAMA_70B_FLAGS = [
    "--params",
    "70.6e9",
    "--dtype",
    "bf16",
    "--layers",
    "80",
    "--attention-heads",
    "64",
    "--kv-heads",
    "8",
    "--head-dim",
    "128",
    "--kv-dtype",
    "bf16",
    "--prompt-tokens",
    "4000",
    "--output-tokens",
    "1000",
    "--tp",
    "4",
    "--gpu",
    "H100-80GB",
    "--gpus-per-node",
    "8",
    "--lambda-peak",
    "20",
    "--mu-good",
    "2.5",
    "--rho-target",
    "0.7",
    "--failure-reserve",
    "1",
]


def run(*args: str) -> str:
    out = StringIO()
    call_command("capacity", *args, stdout=out)
    return out.getvalue()


def run_json(*args: str) -> dict[str, Any]:
    return json.loads(run(*args, "--json"))


def line(data: dict[str, Any], ledger: str, key: str) -> dict[str, Any]:
    lines = next(x for x in data["ledgers"] if x["name"] == ledger)["lines"]
    return next(x for x in lines if key in x)


def test_the_command_sizes_llama_70b_kv_at_320_kib_per_token_and_13_replicas() -> None:
    data = run_json(*LLAMA_70B_FLAGS)
    per_token = line(data, "kv", "kv_bytes_per_token")
    assert per_token["kv_bytes_per_token"] == 327680 and per_token["kv_kib_per_token"] == 320
    assert data["r_total_replicas"] == 13
    assert line(data, "kv", "prompt_tokens_p99")["source"] == "--prompt-tokens"
    assert line(data, "weights", "usable_memory_bytes_per_gpu")["origin"] == "example"
    assert "num_layers = 80 (entered: --layers)" in data["inputs"]


def test_the_text_output_has_one_section_per_ledger() -> None:
    text = run(*LLAMA_70B_FLAGS)
    assert "WEIGHTS (lower bound)" in text and "REPLICAS REQUIRED: 13" in text


def test_a_config_fills_the_shape_and_flags_override_it(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "hidden_size": 4096,
                "intermediate_size": 14336,
                "num_attention_heads": 32,
                "num_hidden_layers": 32,
                "num_key_value_heads": 8,
                "torch_dtype": "bfloat16",
                "vocab_size": 128256,
            }
        )
    )
    data = run_json(
        "--config",
        str(config),
        "--kv-heads",
        "4",
        "--usable-memory-gib",
        "79.1",
        "--prompt-tokens",
        "1000",
        "--output-tokens",
        "100",
    )
    assert "num_layers = 32 (config.json num_hidden_layers)" in data["inputs"]
    assert "num_kv_heads = 4 (entered: --kv-heads)" in data["inputs"]
    assert "weight dtype = bfloat16 (config)" in data["inputs"]
    assert line(data, "kv", "kv_bytes_per_token")["kv_bytes_per_token"] == 65536
    assert line(data, "weights", "parameters_count")["origin"] == "model config"
    assert data["r_total_replicas"] is None  # lambda and mu need measurement


def test_an_mla_config_is_refused_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"num_hidden_layers": 61, "num_attention_heads": 128, "kv_lora_rank": 512})
    )
    with pytest.raises(CommandError, match=r"^--config: kv_lora_rank: multi-head latent"):
        run("--config", str(config), "--usable-memory-gib", "79.1")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--rho-target", "1.5"], r"^--rho-target: must be a fraction in \(0, 1\), got 1.5$"),
        (["--mu-good", "0"], r"^--mu-good: must be a positive finite number, got 0.0$"),
        (["--lambda-peak", "-2"], r"^--lambda-peak: must be a positive finite number"),
        (["--failure-reserve", "-1"], r"^--failure-reserve: must be a whole number >= 0"),
        (["--layers", "0"], r"^--layers: must be a positive integer, got 0$"),
        (["--kv-heads", "7"], r"^--kv-heads: 7 KV heads do not divide 64"),
        (["--dtype", "int3"], r"^--dtype: unknown weight dtype 'int3'"),
        (["--kv-dtype", "int2"], r"^--kv-dtype: unknown kv dtype 'int2'"),
        (["--tp", "3"], r"^--tp: 8 KV heads cannot be split evenly over TP=3$"),
        (["--tp", "0"], r"^--tp: must be >= 1, got 0$"),
        (["--gpu", "B300"], r"^--gpu: unknown GPU profile 'B300'"),
        (["--gpu-memory-utilization", "1.2"], r"^--gpu-memory-utilization: must be in \(0, 1\]"),
        (["--prompt-tokens", "0"], r"^--prompt-tokens: must be positive, got 0.0$"),
    ],
)
def test_bad_flags_give_a_one_line_error_naming_the_flag(change: list[str], message: str) -> None:
    flags = list(LLAMA_70B_FLAGS)
    if change[0] in flags:
        flags[flags.index(change[0]) + 1] = change[1]
    else:
        flags += change
    with pytest.raises(CommandError, match=message):
        run(*flags)


def test_a_missing_shape_flag_is_named() -> None:
    with pytest.raises(CommandError, match=r"^--head-dim: needed"):
        run("--layers", "32", "--kv-heads", "8", "--usable-memory-gib", "79.1", "--dtype", "bf16")


def test_memory_is_required_and_not_twice() -> None:
    flags = [f for f in LLAMA_70B_FLAGS if f not in ("--gpu", "H100-80GB")]
    with pytest.raises(CommandError, match=r"^--usable-memory-gib: needed"):
        run(*flags)
    with pytest.raises(CommandError, match=r"^--usable-memory-gib: give either it or --gpu"):
        run(*LLAMA_70B_FLAGS, "--usable-memory-gib", "79.1")


def test_nameplate_memory_entered_as_usable_is_flagged_in_the_json() -> None:
    flags = [f for f in LLAMA_70B_FLAGS if f not in ("--gpu", "H100-80GB")]
    data = run_json(*flags, "--usable-memory-gib", "80")
    assert "nameplate_memory_as_usable" in {m["name"] for m in data["mistakes"]}


SCALES = {"gib": 1024**3, "mib": 1024**2, "kib": 1024}


def test_every_byte_figure_in_the_json_is_also_in_gib_mib_and_kib() -> None:
    data = run_json(*LLAMA_70B_FLAGS)
    byte_lines = [ln for ledger in data["ledgers"] for ln in ledger["lines"]
                  if ln["unit"] == "bytes"]  # fmt: skip
    assert {"weights_bytes", "kv_bytes_per_token"} <= {k for ln in byte_lines for k in ln}
    for ln in byte_lines:
        key = next(k for k in ln if "bytes" in k)
        if ln[key] is None:
            continue  # needs measurement: no figure to convert
        twins = {k: v for k, v in ln.items() if any(f"_{u}" in k for u in SCALES)}
        assert len(twins) == 3, ln
        for name, value in twins.items():
            unit = next(u for u in SCALES if f"_{u}" in name)
            assert value * SCALES[unit] == pytest.approx(ln[key]), (name, ln)
