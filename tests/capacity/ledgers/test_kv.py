from __future__ import annotations

import pytest

from capacity.figures import GIB, KIB, Ledger, Origin, Quantity
from capacity.ledgers import (
    RequestLengths,
    cache_config_check,
    kv_bytes_per_request,
    kv_bytes_per_token,
    kv_bytes_per_token_per_rank,
    kv_ledger,
)
from capacity.profiles import ModelShape

LLAMA_8B = ModelShape.entered(num_layers=32, num_kv_heads=8, head_dim=128, num_attention_heads=32)
LLAMA_70B = ModelShape.entered(num_layers=80, num_kv_heads=8, head_dim=128, num_attention_heads=64)
# An MHA model shaped like Llama-2-7B: every attention head has its own K and V.
LLAMA2_7B = ModelShape.entered(num_layers=32, num_kv_heads=32, head_dim=128)


def got(ledger: Ledger, key: str) -> Quantity:
    found = ledger.get(key)
    assert found is not None, key
    return found


def tokens(key: str, value: float | None) -> Quantity:
    origin: Origin = "entered" if value is not None else "needs measurement"
    return Quantity(key, value, "tokens", origin)


def lengths(p: str, prompt: float | None, output: float | None) -> RequestLengths:
    return RequestLengths(
        p, tokens(f"prompt_tokens_{p}", prompt), tokens(f"output_tokens_{p}", output)
    )


def test_kv_bytes_per_token_for_llama_8b_gqa_is_128_kib() -> None:
    assert kv_bytes_per_token(LLAMA_8B, 2.0) == 131072 == 128 * KIB


def test_kv_bytes_per_token_for_llama_70b_gqa_is_320_kib() -> None:
    assert kv_bytes_per_token(LLAMA_70B, 2.0) == 327680 == 320 * KIB


def test_kv_bytes_per_token_for_an_mha_7b_model_is_512_kib() -> None:
    assert kv_bytes_per_token(LLAMA2_7B, 2.0) == 512 * KIB


def test_fp8_kv_halves_the_bytes_per_token() -> None:
    assert kv_bytes_per_token(LLAMA_70B, 1.0) == 160 * KIB


def test_per_rank_kv_divides_by_tp_when_there_are_enough_kv_heads() -> None:
    per_rank, text = kv_bytes_per_token_per_rank(LLAMA_70B, 2.0, tp=4, pp=1)
    assert per_rank == 80 * KIB and "H_kv/TP" in text


def test_per_rank_kv_replicates_heads_when_tp_exceeds_the_kv_heads() -> None:
    one_head = ModelShape.entered(
        num_layers=80, num_kv_heads=4, head_dim=128, num_attention_heads=64
    )
    per_rank, text = kv_bytes_per_token_per_rank(one_head, 2.0, tp=8, pp=1)
    assert per_rank == 2 * 80 * 128 * 2 and "replicated 2x" in text


def test_kv_bytes_per_request_for_llama_70b_at_4000_plus_1000_tokens_is_1_53_gib() -> None:
    found = kv_bytes_per_request(327680, lengths("p99", 4000, 1000))
    assert found == 327680 * 5000
    assert found / GIB == pytest.approx(1.5259, abs=1e-4)


def test_a_missing_percentile_needs_measurement() -> None:
    assert kv_bytes_per_request(327680, lengths("p95", 4000, None)) is None


def ledger_for(shape: ModelShape, tp: int, weights_per_rank: float) -> dict[str, Quantity]:
    ledger = kv_ledger(
        shape=shape,
        bytes_per_element=Quantity("kv_bytes_per_element", 2.0, "bytes", "derived"),
        tp=tp,
        pp=1,
        lengths=[lengths("p50", 1000, 200), lengths("p95", None, None), lengths("p99", 4000, 1000)],
        usable_memory_bytes_per_gpu=Quantity(
            "usable_memory_bytes_per_gpu", 80 * GIB, "bytes", "entered"
        ),
        gpu_memory_utilization=Quantity(
            "gpu_memory_utilization_fraction", 0.9, "fraction", "entered"
        ),
        weights_bytes_per_rank=Quantity(
            "weights_bytes_per_rank", weights_per_rank, "bytes", "derived"
        ),
    )
    return {line.quantity.key: line.quantity for line in ledger.lines}


def test_the_kv_pool_is_usable_times_ranks_times_utilisation_minus_weights() -> None:
    found = ledger_for(LLAMA_70B, tp=4, weights_per_rank=32 * GIB)
    assert found["kv_pool_bytes_per_replica"].value == pytest.approx((80 * 0.9 - 32) * 4 * GIB)
    assert found["kv_bytes_per_request_p99"].value == 327680 * 5000
    assert found["concurrent_sequences_p99"].value == (40 * 4 * GIB) // (327680 * 5000)
    assert found["concurrent_sequences_p95"].origin == "needs measurement"


def test_the_pool_is_an_upper_bound_while_other_lines_need_measurement() -> None:
    pool = kv_ledger(
        shape=LLAMA_8B,
        bytes_per_element=Quantity("kv_bytes_per_element", 2.0, "bytes", "derived"),
        tp=1,
        pp=1,
        lengths=[],
        usable_memory_bytes_per_gpu=Quantity(
            "usable_memory_bytes_per_gpu", 79.1 * GIB, "bytes", "entered"
        ),
        gpu_memory_utilization=Quantity(
            "gpu_memory_utilization_fraction", 0.9, "fraction", "entered"
        ),
        weights_bytes_per_rank=Quantity("weights_bytes_per_rank", 15 * GIB, "bytes", "derived"),
        other_bytes_per_rank=[
            Quantity("activations_bytes_per_rank", None, "bytes", "needs measurement")
        ],
    ).get("kv_pool_bytes_per_replica")
    assert pool is not None and "upper bound" in pool.note


def test_cache_config_compares_the_fleets_tokens_with_the_ledgers_and_explains_the_gap() -> None:
    pool = Quantity("kv_pool_bytes_per_replica", 40 * GIB, "bytes", "derived")
    ledger = cache_config_check(
        num_gpu_blocks=Quantity("num_gpu_blocks_blocks", 18000, "blocks", "measured"),
        block_size=Quantity("block_size_tokens", 16, "tokens", "measured"),
        kv_pool_bytes=pool,
        kv_stored_bytes_per_token=131072,
    )
    assert got(ledger, "kv_cache_tokens_per_replica").value == 288000
    assert got(ledger, "kv_ledger_tokens_per_replica").value == 327680
    assert got(ledger, "kv_tokens_difference_tokens").value == 39680
    assert "CUDA graphs" in ledger.notes[0] and "gpu_memory_utilization" in ledger.notes[0]


def test_without_cache_config_the_check_says_the_fleet_does_not_expose_it() -> None:
    ledger = cache_config_check(
        num_gpu_blocks=None,
        block_size=None,
        kv_pool_bytes=Quantity("kv_pool_bytes_per_replica", 40 * GIB, "bytes", "derived"),
        kv_stored_bytes_per_token=131072,
    )
    assert "vllm:cache_config_info" in ledger.notes[0]
    assert ledger.lines[0].quantity.value is None


def test_kv_heads_that_do_not_split_over_tp_are_refused() -> None:
    with pytest.raises(ValueError, match="8 KV heads cannot be split evenly over TP=3"):
        kv_bytes_per_token_per_rank(LLAMA_70B, 2.0, tp=3, pp=1)
