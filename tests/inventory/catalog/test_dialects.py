from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from inventory.catalog.buckets import B_REQ, B_TOK, B_TTFT, one_two_five
from inventory.catalog.dialects import (
    FamilyLike,
    dcgm_host,
    dcgm_uuid,
    detect_data_parallel,
    detect_dcgm_labels,
    detect_dialect,
    detect_endpoint,
    detect_kind,
    infer_bucket_generation,
    infer_max_model_len,
    profile_endpoint,
    series_kind,
    wire_names,
)

DATA = Path(__file__).resolve().parent.parent / "data"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
HELP_V1 = "Number of requests in model execution batches."
HELP_V0 = "Number of requests currently running on GPU."
PRE_TTFT = tuple(b for b in B_TTFT if b <= 10.0)
PRE_TOK = tuple(b for b in B_TOK if b <= 2.5)
PRE_REQ = tuple(b for b in B_REQ if b <= 60.0)
V0_063_E2E = (1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)


@dataclass(frozen=True)
class Payload:
    """A small vLLM-shaped /metrics body: names, buckets and labels from the reference."""

    gauges: tuple[str, ...] = ()
    counters: tuple[str, ...] = ()
    histograms: Mapping[str, Sequence[float]] = field(default_factory=dict)
    engines: tuple[str, ...] = ("0",)  # () means: no `engine` label at all
    help_running: str = HELP_V1

    def text(self) -> str:
        registry = CollectorRegistry()
        labels = ["model_name", "engine"] if self.engines else ["model_name"]
        values: list[tuple[str, ...]] = [(MODEL, e) for e in self.engines] or [(MODEL,)]
        metrics: list[Gauge | Counter | Histogram] = []
        for name in self.gauges:
            text = self.help_running if name == "vllm:num_requests_running" else name
            metrics.append(Gauge(name, text, labels, registry=registry))
        for name in self.counters:
            metrics.append(Counter(name.removesuffix("_total"), name, labels, registry=registry))
        for name, buckets in self.histograms.items():
            metrics.append(Histogram(name, name, labels, buckets=buckets, registry=registry))
        for metric in metrics:
            for value in values:
                if isinstance(metric, Histogram):
                    metric.labels(*value).observe(0.5)
                else:
                    metric.labels(*value).inc()
        return generate_latest(registry).decode()


CURRENT = Payload(
    gauges=("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"),
    counters=("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"),
    histograms={
        "vllm:time_to_first_token_seconds": B_TTFT,
        "vllm:inter_token_latency_seconds": B_TOK,
        "vllm:request_time_per_output_token_seconds": B_TOK,
        "vllm:e2e_request_latency_seconds": B_REQ,
        "vllm:request_prompt_tokens": one_two_five(4096),
        "vllm:iteration_tokens_total": (1, 8, 16, 32),
    },
)
V1_010 = dataclasses.replace(
    CURRENT,
    gauges=CURRENT.gauges + ("vllm:gpu_cache_usage_perc",),
    counters=CURRENT.counters
    + ("vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"),
    engines=("0", "1"),
)
V1_08 = Payload(
    gauges=("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:gpu_cache_usage_perc"),
    counters=("vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"),
    histograms={
        "vllm:time_to_first_token_seconds": PRE_TTFT,
        "vllm:time_per_output_token_seconds": PRE_TOK,
        "vllm:e2e_request_latency_seconds": PRE_REQ,
    },
    engines=(),
)
V0 = Payload(
    gauges=(
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:num_requests_swapped",
        "vllm:gpu_cache_usage_perc",
        "vllm:cpu_cache_usage_perc",
    ),
    counters=("vllm:prompt_tokens_total", "vllm:generation_tokens_total"),
    histograms={
        "vllm:time_to_first_token_seconds": PRE_TTFT,
        "vllm:time_per_output_token_seconds": PRE_TOK,
        "vllm:time_in_queue_requests": PRE_REQ,
        "vllm:e2e_request_latency_seconds": V0_063_E2E,
    },
    engines=(),
    help_running=HELP_V0,
)
ROUTER_TEXT = """\
# HELP vllm:num_requests_running Number of running requests
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{server="http://10.0.0.7:8000"} 3.0
# HELP vllm:current_qps Current Queries Per Second
# TYPE vllm:current_qps gauge
vllm:current_qps{server="http://10.0.0.7:8000"} 4.5
# HELP vllm:gpu_prefix_cache_hits_total GPU prefix cache hits
# TYPE vllm:gpu_prefix_cache_hits_total gauge
vllm:gpu_prefix_cache_hits_total{server="http://10.0.0.7:8000"} 0.0
"""
ENGINE_BESIDE_ROUTER = Payload(gauges=("vllm:kv_cache_usage_perc",)).text() + ROUTER_TEXT
SHARED_NAME_ONLY = "# TYPE vllm:num_requests_running gauge\n"
GATEWAY_TEXT = """\
# TYPE inference_pool_ready_pods gauge
inference_pool_ready_pods{name="llama-pool"} 3
"""
PROBER_TEXT = """\
# TYPE fleetscope_prober_checks counter
fleetscope_prober_checks_total{model_name="m",result="pass"} 12.0
"""
NODE_TEXT = """\
# TYPE node_load1 gauge
node_load1 0.5
"""
HTTP_ONLY_TEXT = """\
# TYPE http_requests_total counter
http_requests_total{handler="/v1/completions",method="POST",status="2xx"} 7.0
# TYPE process_open_fds gauge
process_open_fds 42.0
"""
RAY_TEXT = """\
# TYPE vllm_time_to_first_token_seconds histogram
vllm_time_to_first_token_seconds_bucket{le="+Inf",ReplicaId="r1"} 1.0
vllm_time_to_first_token_seconds_count{ReplicaId="r1"} 1.0
vllm_time_to_first_token_seconds_sum{ReplicaId="r1"} 0.2
"""


def dcgm_text(host: str = "Hostname", uuid: str = "UUID", gpus: int = 2) -> str:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for gpu in range(gpus):
        lines.append(
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="{gpu}",{uuid}="GPU-{gpu:04d}",device="nvidia{gpu}",'
            f'modelName="NVIDIA H100 80GB HBM3",{host}="node-1",'
            f'DCGM_FI_DRIVER_VERSION="570.133.20",pod="vllm-0",namespace="llm"}} 87'
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PcFamily:
    """prometheus_client's Metric calls HELP `documentation`; its samples already fit."""

    name: str
    type: str
    help: str
    samples: tuple[Sample, ...]


def via_prometheus_client(text: str) -> list[FamilyLike]:
    """The same shape from prometheus_client's parser, which keeps `_created` families apart."""
    return [
        PcFamily(m.name, m.type, m.documentation, tuple(m.samples))
        for m in text_string_to_metric_families(text)
    ]


def families(text: str) -> list[FamilyLike]:
    try:
        from inventory.exposition import parse
    except ImportError:  # the strict parser is optional for these tests
        return via_prometheus_client(text)
    return list(parse(text))


def checked_in(name: str) -> list[FamilyLike]:
    return families((DATA / name).read_text(encoding="utf-8"))


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


@pytest.mark.parametrize("payload", [CURRENT, V1_010, V1_08, V0], ids=lambda p: p.help_running)
def test_prometheus_client_families_give_the_same_profile_as_the_strict_parser(
    payload: Payload,
) -> None:
    ours, theirs = (
        profile_endpoint(families(payload.text())),
        profile_endpoint(via_prometheus_client(payload.text())),
    )
    assert (ours.kind, ours.dialect, ours.engines) == (theirs.kind, theirs.dialect, theirs.engines)
    assert ours.data_parallel.multiprocess is theirs.data_parallel.multiprocess is False


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


def test_wire_names_put_total_back_on_counters_and_drop_created_series() -> None:
    names = wire_names(families(CURRENT.text()))
    assert "vllm:prefix_cache_hits_total" in names
    assert "vllm:iteration_tokens_total" in names
    assert not any(n.endswith("_created") for n in names)
    assert wire_names(via_prometheus_client(CURRENT.text())) == names


def test_data_parallel_server_in_multiprocess_mode_is_recognised() -> None:
    report = detect_data_parallel(checked_in("vllm_dp8.prom"))
    assert report.engines == tuple(str(i) for i in range(8))
    assert (report.size, report.multiprocess) == (8, True)
    assert "multiprocess: no python_*/process_* families and no _created series" in report.evidence


def test_single_engine_server_is_single_process() -> None:
    report = detect_data_parallel(checked_in("vllm_1engine.prom"))
    assert (report.engines, report.multiprocess) == (("0",), False)
    assert "single-process: _created series" in report.evidence


def test_single_process_is_also_read_from_process_families() -> None:
    report = detect_data_parallel(families(HTTP_ONLY_TEXT))
    assert report.multiprocess is False
    assert report.evidence == ("single-process: process families (process_open_fds)",)


def test_a_replica_owning_only_some_global_ranks_is_pointed_out() -> None:
    report = detect_data_parallel(
        families(Payload(gauges=("vllm:num_requests_running",), engines=("3",)).text())
    )
    assert report.engines == ("3",)
    assert "no engine 0: an externally load-balanced replica owning some DP ranks" in (
        report.evidence
    )


def test_engine_ranks_sort_numerically() -> None:
    payload = Payload(gauges=("vllm:num_requests_running",), engines=("10", "2", "0", "1"))
    assert detect_data_parallel(families(payload.text())).engines == ("0", "1", "2", "10")


def test_multiprocess_mode_is_left_open_without_vllm_counters_or_histograms() -> None:
    only_gauges = Payload(gauges=("vllm:num_requests_running",)).text()
    assert detect_data_parallel(families(only_gauges)).multiprocess is None
    assert detect_data_parallel(families(GATEWAY_TEXT)).multiprocess is None
    assert detect_data_parallel(families(dcgm_text())).multiprocess is None


@pytest.mark.parametrize(
    ("host", "uuid", "evidence"),
    [
        ("Hostname", "UUID", "host label Hostname, as in every released dcgm-exporter"),
        ("hostname", "UUID", "host label hostname: dcgm-exporter main after 2026-05-12"),
        ("Hostname", "uuid", "lowercase uuid: the exporter runs with the old-style label flag"),
    ],
)
def test_dcgm_host_and_uuid_label_spellings_are_reported(
    host: str, uuid: str, evidence: str
) -> None:
    report = detect_dcgm_labels(families(dcgm_text(host, uuid)))
    assert (report.host_labels, report.uuid_labels) == ((host,), (uuid,))
    assert (report.gpus, report.driver_versions) == (("0", "1"), ("570.133.20",))
    assert evidence in report.evidence
    assert "Kubernetes pod mapping on: join to vLLM by pod/namespace" in report.evidence


def test_dcgm_exporters_of_two_versions_behind_one_scrape_show_both_host_spellings() -> None:
    newer_gpu = dcgm_text("hostname", gpus=2).splitlines()[-1]
    report = detect_dcgm_labels(families(dcgm_text("Hostname", gpus=1) + newer_gpu + "\n"))
    assert report.host_labels == ("Hostname", "hostname")
    assert "both Hostname and hostname: exporters of different versions" in report.evidence


@pytest.mark.parametrize(
    ("labels", "host", "uuid"),
    [
        ({"Hostname": "a", "UUID": "GPU-1"}, "a", "GPU-1"),
        ({"hostname": "b", "uuid": "GPU-2"}, "b", "GPU-2"),
        ({"gpu_uuid": "GPU-3"}, None, "GPU-3"),
        ({}, None, None),
    ],
)
def test_dcgm_host_and_uuid_accept_every_spelling(
    labels: dict[str, str], host: str | None, uuid: str | None
) -> None:
    assert (dcgm_host(labels), dcgm_uuid(labels)) == (host, uuid)


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


def test_detect_endpoint_flattens_the_profile_for_the_inventory() -> None:
    profile = detect_endpoint(checked_in("vllm_dp8.prom"))
    assert detect_endpoint is profile_endpoint
    assert (profile.kind, profile.dialect) == ("engine", "current")
    assert profile.engines == tuple(str(i) for i in range(8))
    assert profile.dcgm is None
    assert set(profile.dialect_report.evidence) <= set(profile.evidence)
    assert "latency buckets: post-2025-04-07 set" in profile.evidence
    assert len(profile.evidence) == len(set(profile.evidence))


def test_dcgm_profile_carries_the_label_report() -> None:
    profile = profile_endpoint(families(dcgm_text()))
    assert profile.dcgm is not None and profile.dcgm.host_labels == ("Hostname",)
    assert profile.max_model_len.at_least is None


def test_reports_are_frozen_and_the_same_input_gives_the_same_answer() -> None:
    fams = families(V1_010.text())
    first, second = profile_endpoint(fams), profile_endpoint(fams)
    assert first == second
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.dialect_report.dialect = "current"  # type: ignore[misc]  # the write must fail


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
