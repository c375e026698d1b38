from __future__ import annotations

import json
import math

import pytest

from capacity.figures import GIB, Ledger, Quantity
from capacity.review import CacheConfig, capacity_review, sensitivity
from tests.capacity.review.helpers import entered, llama_70b_inputs


def got(ledger: Ledger, key: str) -> Quantity:
    found = ledger.get(key)
    assert found is not None, key
    return found


def test_the_review_answers_13_replicas_for_20_rps_at_2_5_each_and_70_percent() -> None:
    review = capacity_review(llama_70b_inputs())
    assert review.r_total_replicas == 13
    assert [ledger.name for ledger in review.ledgers] == [
        "weights",
        "kv",
        "cache config",
        "replicas",
    ]
    assert got(review.ledger("kv"), "kv_bytes_per_token").value == 327680


def test_sensitivity_ranks_mu_and_rho_above_lambda_because_a_10_percent_cut_costs_more() -> None:
    ranked = capacity_review(llama_70b_inputs()).sensitivity
    assert [s.input_key for s in ranked] == [
        "mu_good_requests_per_second",
        "rho_target_fraction",
        "lambda_peak_requests_per_second",
    ]
    steady = 20 / (2.5 * 0.7)
    assert ranked[0].change_minus_10_replicas == pytest.approx(steady / 0.9 - steady)
    assert ranked[0].change_plus_10_replicas == pytest.approx(steady / 1.1 - steady)
    assert (ranked[0].r_total_minus_10_replicas, ranked[0].r_total_plus_10_replicas) == (14, 12)
    assert (ranked[2].r_total_minus_10_replicas, ranked[2].r_total_plus_10_replicas) == (12, 14)


def test_a_large_reserve_outranks_the_load_inputs_when_it_moves_r_total_more() -> None:
    base = {
        "lambda_peak_requests_per_second": 2.0,
        "mu_good_requests_per_second": 2.0,
        "rho_target_fraction": 0.5,
        "failure_reserve_replicas": 30.0,
        "rollout_reserve_replicas": 0.0,
    }
    ranked = sensitivity(base)
    assert ranked[0].input_key == "failure_reserve_replicas"
    assert ranked[0].change_plus_10_replicas == pytest.approx(3.0)


def test_weights_fit_one_node_and_p99_kv_stays_under_the_pool_threshold() -> None:
    flips = {f.name: f for f in capacity_review(llama_70b_inputs()).flips}
    assert flips["weights_do_not_fit_one_node"].state is False
    assert flips["p99_request_kv_above_pool_fraction"].state is False
    assert flips["prefill_share_suggests_split"].state is None


def test_a_405b_model_on_one_node_of_8_flips_to_multi_node() -> None:
    review = capacity_review(
        llama_70b_inputs(
            shape=llama_70b_inputs().shape.override(
                parameters=entered("parameters_count", 405e9, "parameters")
            ),
            tp=8,
        )
    )
    flip = next(f for f in review.flips if f.name == "weights_do_not_fit_one_node")
    assert flip.state is True and "pipeline across nodes" in flip.detail


def test_long_p99_requests_flip_the_kv_design() -> None:
    review = capacity_review(
        llama_70b_inputs(prompt_tokens_p99=entered("prompt_tokens_p99", 100_000, "tokens"))
    )
    flip = next(f for f in review.flips if f.name == "p99_request_kv_above_pool_fraction")
    assert flip.state is True


def test_a_prefill_heavy_service_time_suggests_splitting_prefill_and_decode() -> None:
    review = capacity_review(
        llama_70b_inputs(
            prefill_seconds=Quantity("prefill_seconds_per_request", 1.5, "seconds", "measured"),
            decode_seconds=Quantity("decode_seconds_per_request", 2.5, "seconds", "measured"),
        )
    )
    flip = next(f for f in review.flips if f.name == "prefill_share_suggests_split")
    assert flip.state is True and "37.5%" in flip.detail


def test_sanity_checks_pass_on_the_formulas() -> None:
    checks = {f.name: f.state for f in capacity_review(llama_70b_inputs()).sanity_checks}
    assert checks == {
        "doubling_context_doubles_kv_per_request": True,
        "more_replicas_never_lower_capacity": True,
    }


def test_concurrent_users_entered_as_arrival_rate_are_flagged() -> None:
    review = capacity_review(
        llama_70b_inputs(concurrency=Quantity("concurrency_requests", 20.4, "requests", "measured"))
    )
    assert "concurrent_users_as_arrival_rate" in {m.name for m in review.mistakes}


def test_nameplate_memory_no_failure_reserve_and_missing_metrics_are_flagged() -> None:
    review = capacity_review(
        llama_70b_inputs(
            usable_memory_bytes_per_gpu=entered("usable_memory_bytes_per_gpu", 80 * GIB, "bytes"),
            failure_reserve=entered("failure_reserve_replicas", 0, "replicas"),
            missing_metrics=("vllm:request_prompt_tokens",),
        )
    )
    names = {m.name for m in review.mistakes}
    assert names == {"nameplate_memory_as_usable", "no_failure_reserve", "input_metric_not_exposed"}


def test_the_cache_config_check_uses_the_fleets_blocks() -> None:
    review = capacity_review(
        llama_70b_inputs(
            cache_config=CacheConfig(
                Quantity("num_gpu_blocks_blocks", 30000, "blocks", "measured"),
                Quantity("block_size_tokens", 16, "tokens", "measured"),
            )
        )
    )
    tokens = review.ledger("cache config").get("kv_cache_tokens_per_replica")
    assert tokens is not None and tokens.value == 480000


def test_unknown_mu_good_gives_no_answer_and_no_sensitivity_rather_than_a_guess() -> None:
    review = capacity_review(
        llama_70b_inputs(
            mu_good=Quantity(
                "mu_good_requests_per_second", None, "requests_per_second", "needs measurement"
            )
        )
    )
    assert review.r_total_replicas is None and review.sensitivity == ()
    assert (
        next(
            f for f in review.sanity_checks if f.name == "more_replicas_never_lower_capacity"
        ).state
        is None
    )


def test_the_json_has_units_in_keys_binary_sizes_and_no_nan() -> None:
    data = capacity_review(llama_70b_inputs()).to_dict()
    text = json.dumps(data, allow_nan=False)
    kv = next(ledger for ledger in data["ledgers"] if ledger["name"] == "kv")
    per_token = next(line for line in kv["lines"] if "kv_bytes_per_token" in line)
    assert per_token["kv_bytes_per_token"] == 327680
    assert per_token["kv_kib_per_token"] == 320
    assert per_token["unit"] == "bytes" and per_token["origin"] == "derived"
    assert data["r_total_replicas"] == 13
    assert "NaN" not in text and "Infinity" not in text


def test_to_dict_turns_non_finite_numbers_into_none() -> None:
    review = capacity_review(llama_70b_inputs())
    patched = review.sensitivity[0].__class__("x", math.inf, math.nan, 0.0, 1, 1)
    data = review.__class__(**{**review.__dict__, "sensitivity": (patched,)}).to_dict()
    assert data["sensitivity"][0]["base_value"] is None
