"""What bucket edges tell: a bound on max_model_len and the bucket generation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from inventory.catalog import (
    infer_bucket_generation,
    infer_max_model_len,
)
from inventory.catalog.buckets import B_TOK, B_TTFT, one_two_five
from tests.inventory.catalog.payloads import (
    CURRENT,
    PRE_TOK,
    PRE_TTFT,
    V0_063_E2E,
    Payload,
    families,
)


@pytest.mark.parametrize(
    ("max_model_len", "at_least", "below"),
    [(4096, 2000, 5000), (32768, 20000, 50000), (2000, 2000, 5000), (131072, 100000, 200000)],
)
def test_max_model_len_is_bounded_from_the_one_two_five_buckets(
    max_model_len: int, at_least: int, below: int
) -> None:
    payload = Payload(histograms={"vllm:request_prompt_tokens": one_two_five(max_model_len)})
    report = infer_max_model_len(families(payload.text()))
    assert (report.at_least, report.below) == (at_least, below)
    assert report.at_least is not None and report.below is not None
    assert report.at_least <= max_model_len < report.below
    assert report.source == "vllm:request_prompt_tokens"
    assert report.message.startswith(f"max_model_len is at least {at_least} and below {below}")
    assert "does not expose the exact value" in report.message


def test_max_model_len_is_not_guessed_from_buckets_that_are_not_one_two_five() -> None:
    payload = Payload(histograms={"vllm:request_prompt_tokens": (1, 8, 16, 32)})
    report = infer_max_model_len(families(payload.text()))
    assert (report.at_least, report.below, report.source) == (None, None, None)


@pytest.mark.parametrize(
    ("histograms", "generation", "evidence"),
    [
        (CURRENT.histograms, "post-2025-04-07",
         "vllm:time_to_first_token_seconds: the current bucket set"),
        ({"vllm:time_to_first_token_seconds": PRE_TTFT}, "pre-2025-04-07",
         "vllm:time_to_first_token_seconds: edges stop at 10 s, the pre-2025-04-07 set"),
        ({"vllm:time_per_output_token_seconds": B_TOK[:-1]}, "post-2025-04-07",
         "vllm:time_per_output_token_seconds: edges reach 40 s, past the old 2.5 s"),
        ({"vllm:time_to_first_token_seconds": B_TTFT,
          "vllm:time_per_output_token_seconds": PRE_TOK}, "mixed",
         "vllm:time_per_output_token_seconds: edges stop at 2.5 s, the pre-2025-04-07 set"),
        ({"vllm:e2e_request_latency_seconds": V0_063_E2E}, "pre-2025-04-07",
         "vllm:e2e_request_latency_seconds: starts at 1 s, the V0 <= 0.6.3 set"),
        ({"vllm:time_to_first_token_seconds": (0.5, 1.0, 3.0)}, "unknown",
         "vllm:time_to_first_token_seconds: unrecognised edges ending at 3 s"),
        ({}, "unknown", "no latency histogram with buckets"),
    ],
    ids=["current", "old-ttft", "custom-but-wide", "mixed", "v0-0.6.3", "custom", "none"],
)  # fmt: skip
def test_bucket_generation_is_read_from_latency_bucket_edges(
    histograms: Mapping[str, Sequence[float]], generation: str, evidence: str
) -> None:
    report = infer_bucket_generation(families(Payload(histograms=histograms).text()))
    assert report.generation == generation
    assert evidence in report.evidence
