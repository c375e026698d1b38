from __future__ import annotations

from dataclasses import replace

import pytest

from capacity.figures import Quantity, needs_measurement
from capacity.review import CacheConfig
from tests.capacity.review.helpers import llama_70b_inputs


def test_measured_inputs_fill_what_was_not_entered_by_field_name() -> None:
    measured = {
        "mu_good": Quantity(
            "mu_good_requests_per_second", 3.1, "requests_per_second", "measured", "fleet demo"
        ),
        "cache_config": {
            "num_gpu_blocks": Quantity("num_gpu_blocks_blocks", 100, "blocks", "measured"),
            "block_size": Quantity("block_size_tokens", 16, "tokens", "measured"),
        },
        "missing_metrics": ["vllm:request_generation_tokens"],
    }
    blank = replace(llama_70b_inputs(), mu_good=needs_measurement("mu_good", "requests_per_second"))
    inputs = blank.with_measured(measured)
    assert inputs.mu_good.value == 3.1 and inputs.mu_good.origin == "measured"
    assert isinstance(inputs.cache_config, CacheConfig)
    assert inputs.missing_metrics == ("vllm:request_generation_tokens",)


def test_an_entered_input_wins_over_the_measured_one() -> None:
    measured = Quantity("mu_good_requests_per_second", 3.1, "requests_per_second", "measured")
    inputs = llama_70b_inputs().with_measured({"mu_good": measured})
    assert inputs.mu_good.origin == "entered" and inputs.mu_good.value == 2.5


def test_a_measurement_that_failed_does_not_erase_a_known_figure() -> None:
    failed = needs_measurement("lambda_peak_requests_per_second", "requests_per_second")
    inputs = llama_70b_inputs()
    assert inputs.with_measured({"lambda_peak": failed}).lambda_peak == inputs.lambda_peak


def test_a_measured_key_that_is_not_an_input_is_refused() -> None:
    with pytest.raises(ValueError, match="'tp', not a measurable input"):
        llama_70b_inputs().with_measured({"tp": 8})


def test_percentiles_nobody_gave_need_measurement() -> None:
    p95 = llama_70b_inputs().lengths()[1]
    assert p95.percentile == "p95" and p95.prompt_tokens.origin == "needs measurement"
