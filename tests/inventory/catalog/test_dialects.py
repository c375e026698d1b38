"""An endpoint's exporter kind and vLLM naming era, each with the evidence that decided it."""

from __future__ import annotations

import pytest

from inventory.catalog import (
    detect_dialect,
    detect_kind,
    profile_endpoint,
    series_kind,
)
from inventory.catalog.buckets import B_TOK, B_TTFT
from tests.inventory.catalog.payloads import (
    CURRENT,
    ENGINE_BESIDE_ROUTER,
    GATEWAY_TEXT,
    HELP_V0,
    HTTP_ONLY_TEXT,
    MODEL,
    NODE_TEXT,
    PROBER_TEXT,
    RAY_TEXT,
    ROUTER_TEXT,
    SHARED_NAME_ONLY,
    V0,
    V1_010,
    V1_08,
    Payload,
    dcgm_text,
    families,
)


@pytest.mark.parametrize(
    ("payload", "dialect", "evidence"),
    [
        (CURRENT, "current", "only current names"),
        (V1_010, "v1-0.10", "vllm:gpu_cache_usage_perc beside vllm:kv_cache_usage_perc"),
        (V1_08, "v1-0.8", "pre-rename names only"),
        (V0, "v0", "V0-only names: vllm:cpu_cache_usage_perc, vllm:num_requests_swapped"),
    ],
    ids=["current", "v1-0.10", "v1-0.8", "v0"],
)
def test_each_vllm_generation_is_recognised_with_its_evidence(
    payload: Payload, dialect: str, evidence: str
) -> None:
    report = detect_dialect(families(payload.text()))
    assert report.dialect == dialect
    assert any(line.startswith(evidence) for line in report.evidence), report.evidence


@pytest.mark.parametrize(
    ("payload", "dialect", "evidence"),
    [
        (Payload(gauges=("vllm:num_requests_running", "vllm:gpu_cache_usage_perc"), engines=(),
                 help_running=HELP_V0),
         "v0", "vllm:num_requests_running HELP says 'running on GPU' (V0 wording)"),
        (Payload(gauges=("vllm:num_requests_swapped", "vllm:num_requests_running")),
         "unknown", "V0 never had that label"),
        (Payload(gauges=("vllm:gpu_cache_usage_perc",)),
         "v1-0.8", "engine label present (vLLM from 2025-03-27)"),
        (Payload(gauges=("vllm:kv_cache_usage_perc",), engines=()),
         "unknown", "no engine label (V0, or V1 up to about 0.8.2)"),
        (Payload(histograms={"vllm:time_to_first_token_seconds": B_TTFT}),
         "unknown", "none of the renamed families that date a vLLM build"),
        (Payload(gauges=("vllm:kv_cache_usage_perc",),
                 histograms={"vllm:inter_token_latency_seconds": B_TOK,
                             "vllm:time_per_output_token_seconds": B_TOK}),
         "v1-0.10", "vllm:time_per_output_token_seconds beside vllm:inter_token_latency_seconds"),
    ],
    ids=["late-v0-by-help-text", "v0-names-with-engine-label", "old-names-with-engine-label",
         "current-names-without-engine-label", "nothing-to-date-by", "0.11-itl-beside-tpot"],
)  # fmt: skip
def test_dialect_edge_cases_say_what_decided_them(
    payload: Payload, dialect: str, evidence: str
) -> None:
    report = detect_dialect(families(payload.text()))
    assert report.dialect == dialect
    assert evidence in report.evidence


@pytest.mark.parametrize(
    ("text", "kind", "dialect", "evidence"),
    [
        (CURRENT.text(), "engine", "current", "engine-only names:"),
        (ROUTER_TEXT, "router", "not-vllm", "router-only names: vllm:current_qps"),
        (dcgm_text(), "dcgm", "not-vllm", "1 DCGM families: DCGM_FI_DEV_GPU_UTIL"),
        (GATEWAY_TEXT, "gateway", "not-vllm", "Gateway API inference-extension families:"),
        (PROBER_TEXT, "prober", "not-vllm", "FleetScope golden-set prober families:"),
        (HTTP_ONLY_TEXT, "other", "unknown", "only HTTP/process families: a vLLM server with"),
        (NODE_TEXT, "other", "not-vllm", "no vLLM, router, DCGM or gateway families"),
        (RAY_TEXT, "other", "unknown", "Ray-style names with '_' for ':'"),
        (ENGINE_BESIDE_ROUTER, "other", "unknown", "router and engine series mixed"),
        (SHARED_NAME_ONLY, "other", "unknown", "only vllm: names engines and routers share"),
    ],
    ids=[
        "engine",
        "router",
        "dcgm",
        "gateway",
        "prober",
        "http-only",
        "node",
        "ray",
        "mixed",
        "shared",
    ],
)
def test_endpoint_kind_is_told_from_names_and_labels(
    text: str, kind: str, dialect: str, evidence: str
) -> None:
    fams = families(text)
    report = detect_kind(fams)
    assert report.kind == kind
    assert any(line.startswith(evidence) for line in report.evidence), report.evidence
    assert detect_dialect(fams, report).dialect == dialect


@pytest.mark.parametrize(
    ("labels", "kind"),
    [
        ({"model_name": MODEL, "engine": "0"}, "engine"),
        ({"engine": "0", "block_size": "16"}, "engine"),
        ({"server": "http://10.0.0.7:8000"}, "router"),
        ({"model": MODEL}, None),
        ({}, None),
    ],
)
def test_series_kind_separates_router_series_from_engine_series(
    labels: dict[str, str], kind: str | None
) -> None:
    assert series_kind(labels) == kind


FLEETSIM_DIALECTS = ["current", "v1-0.10", "v1-0.8", "v0"]


@pytest.mark.parametrize("dialect", FLEETSIM_DIALECTS)
def test_fleetsim_payload_of_every_dialect_is_detected_as_that_dialect(dialect: str) -> None:
    from fleetsim.api import sample_exposition

    dp = 2 if dialect in ("current", "v1-0.10") else 1
    text = sample_exposition(dialect=dialect, dp=dp, seed=3, warm_seconds=60.0, max_model_len=8192)
    profile = profile_endpoint(families(text))
    assert (profile.kind, profile.dialect) == ("engine", dialect), profile.evidence
    assert profile.engines == (("0", "1") if dp == 2 else ())
    assert profile.max_model_len.at_least == 5000 and profile.max_model_len.below == 10000
    assert profile.buckets.generation != "mixed"
