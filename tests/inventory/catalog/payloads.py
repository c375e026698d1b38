"""Small /metrics bodies of every vLLM generation and exporter kind, and the two ways the
catalog's tests read them (the strict parser, prometheus_client's parser)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from inventory.catalog import (
    FamilyLike,
)
from inventory.catalog.buckets import B_REQ, B_TOK, B_TTFT, one_two_five
from inventory.exposition import parse

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
    """The strict parser's families of `text`."""
    return list(parse(text))


def checked_in(name: str) -> list[FamilyLike]:
    return families((DATA / name).read_text(encoding="utf-8"))
