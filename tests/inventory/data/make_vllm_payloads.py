"""Regenerate the vLLM-shaped payloads in this folder with the real prometheus_client.

    .venv/bin/python tests/inventory/data/make_vllm_payloads.py

`vllm_1engine.prom` is a single-process server (with `_created` gauges and the
process/python families); `vllm_dp8.prom` is a `--data-parallel-size 8` server,
which vLLM runs in prometheus_client's multiprocess mode (sum-first layout, no
`_created`). Metric names, labels and buckets follow the vLLM reference; the
values come from a seeded simulation of five minutes of traffic.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "meta-llama/Llama-3.1-8B-Instruct"

B_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0]
B_TTFT += [7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
B_TOK = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5]
B_TOK += [10.0, 20.0, 40.0, 80.0]
B_REQ = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0]
B_REQ += [120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
B_125 = [m * 10**k for k in range(5) for m in (1, 2, 5) if m * 10**k <= 32768]
B_ITER = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
B_N = [1, 2, 5, 10, 20]

HISTOGRAMS = {
    "vllm:time_to_first_token_seconds": B_TTFT,
    "vllm:inter_token_latency_seconds": B_TOK,
    "vllm:request_time_per_output_token_seconds": B_TOK,
    "vllm:e2e_request_latency_seconds": B_REQ,
    "vllm:request_queue_time_seconds": B_REQ,
    "vllm:request_prefill_time_seconds": B_REQ,
    "vllm:request_decode_time_seconds": B_REQ,
    "vllm:request_inference_time_seconds": B_REQ,
    "vllm:request_prompt_tokens": B_125,
    "vllm:request_generation_tokens": B_125,
    "vllm:request_max_num_generation_tokens": B_125,
    "vllm:request_params_max_tokens": B_125,
    "vllm:request_params_n": B_N,
    "vllm:request_prefill_kv_computed_tokens": B_125,
    "vllm:iteration_tokens_total": B_ITER,
}
COUNTERS = [
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "vllm:external_prefix_cache_queries",
    "vllm:external_prefix_cache_hits",
    "vllm:mm_cache_queries",
    "vllm:mm_cache_hits",
    "vllm:num_preemptions",
    "vllm:prompt_tokens",
    "vllm:prompt_tokens_cached",
    "vllm:generation_tokens",
    "vllm:estimated_flops_per_gpu",
    "vllm:estimated_read_bytes_per_gpu",
    "vllm:estimated_write_bytes_per_gpu",
]


def build_payload(engines: int, seed: int) -> str:
    # Imported here: multiprocess mode is chosen when prometheus_client is first imported.
    from prometheus_client import (
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        Summary,
        generate_latest,
    )

    multiprocess = "PROMETHEUS_MULTIPROC_DIR" in os.environ
    rng = random.Random(seed)
    registry = CollectorRegistry()
    sink = CollectorRegistry() if multiprocess else registry
    base = ["model_name", "engine"]
    gauges = {
        name: Gauge(name, f"{name} gauge.", base, registry=sink, multiprocess_mode="mostrecent")
        for name in (
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:kv_cache_usage_perc",
        )
    }
    by_reason = Gauge(
        "vllm:num_requests_waiting_by_reason",
        "Requests waiting, by reason.",
        [*base, "reason"],
        registry=sink,
        multiprocess_mode="mostrecent",
    )
    sleep = Gauge(
        "vllm:engine_sleep_state",
        "Engine sleep state (one-hot).",
        [*base, "sleep_state"],
        registry=sink,
        multiprocess_mode="mostrecent",
    )
    cache_info = Gauge(
        "vllm:cache_config_info",
        "Information of the LLMEngine CacheConfig",
        ["block_size", "cache_dtype", "enable_prefix_caching", "engine", "num_gpu_blocks"],
        registry=sink,
        multiprocess_mode="mostrecent",
    )
    counters = {
        name: Counter(name, f"Number of {name[5:].replace('_', ' ')}.", base, registry=sink)
        for name in COUNTERS
    }
    success = Counter(
        "vllm:request_success",
        "Count of successfully processed requests.",
        [*base, "finished_reason"],
        registry=sink,
    )
    by_source = Counter(
        "vllm:prompt_tokens_by_source",
        "Prompt tokens by source.",
        [*base, "source"],
        registry=sink,
    )
    histograms = {
        name: Histogram(name, f"Histogram of {name[5:]}.", base, buckets=b, registry=sink)
        for name, b in HISTOGRAMS.items()
    }
    http_requests = Counter(
        "http_requests_total",
        "Total number of requests by method, status and handler.",
        ["handler", "method", "status"],
        registry=sink,
    )
    http_size = Summary(
        "http_request_size_bytes",
        "Content length of incoming requests.",
        ["handler"],
        registry=sink,
    )
    http_latency = Histogram(
        "http_request_duration_seconds",
        "Latency with only few buckets by handler.",
        ["handler", "method"],
        buckets=[0.1, 0.5, 1],
        registry=sink,
    )

    for engine in range(engines):
        e = str(engine)
        requests = rng.randint(200, 900)
        for _ in range(requests):
            prompt = int(rng.lognormvariate(6.5, 1.0)) + 1
            gen = int(rng.lognormvariate(5.0, 0.8)) + 1
            ttft = rng.lognormvariate(-1.5, 0.9)
            itl = rng.lognormvariate(-3.5, 0.4)
            queue = rng.expovariate(8.0)
            h = {name: hist.labels(MODEL, e) for name, hist in histograms.items()}
            h["vllm:time_to_first_token_seconds"].observe(ttft)
            h["vllm:request_queue_time_seconds"].observe(queue)
            h["vllm:request_prefill_time_seconds"].observe(ttft - queue if ttft > queue else ttft)
            h["vllm:request_decode_time_seconds"].observe(itl * gen)
            h["vllm:request_inference_time_seconds"].observe(ttft + itl * gen)
            h["vllm:e2e_request_latency_seconds"].observe(ttft + itl * gen + 0.01)
            h["vllm:request_time_per_output_token_seconds"].observe(itl)
            for _ in range(min(gen, 20)):
                h["vllm:inter_token_latency_seconds"].observe(rng.lognormvariate(-3.5, 0.5))
            h["vllm:request_prompt_tokens"].observe(prompt)
            h["vllm:request_generation_tokens"].observe(gen)
            h["vllm:request_max_num_generation_tokens"].observe(gen)
            h["vllm:request_params_max_tokens"].observe(rng.choice([256, 512, 1024, 2048]))
            h["vllm:request_params_n"].observe(1)
            h["vllm:request_prefill_kv_computed_tokens"].observe(prompt * rng.random())
            h["vllm:iteration_tokens_total"].observe(rng.randint(1, 8192))
            counters["vllm:prompt_tokens"].labels(MODEL, e).inc(prompt)
            counters["vllm:generation_tokens"].labels(MODEL, e).inc(gen)
            reason = rng.choices(["stop", "length", "abort", "error"], [80, 15, 4, 1])[0]
            success.labels(MODEL, e, reason).inc()
        for name, counter in counters.items():
            if name not in ("vllm:prompt_tokens", "vllm:generation_tokens"):
                counter.labels(MODEL, e).inc(rng.randint(0, 10**6))
        for source in ("local_compute", "local_cache_hit", "external_kv_transfer"):
            by_source.labels(MODEL, e, source).inc(rng.randint(0, 10**6))
        gauges["vllm:num_requests_running"].labels(MODEL, e).set(rng.randint(0, 64))
        gauges["vllm:num_requests_waiting"].labels(MODEL, e).set(rng.randint(0, 10))
        gauges["vllm:kv_cache_usage_perc"].labels(MODEL, e).set(rng.random())
        for reason in ("capacity", "deferred"):
            by_reason.labels(MODEL, e, reason).set(rng.randint(0, 5))
        for state in ("awake", "weights_offloaded", "discard_all"):
            sleep.labels(MODEL, e, state).set(1 if state == "awake" else 0)
        cache_info.labels("16", "auto", "True", e, "27335").set(1)
    for handler in ("/v1/chat/completions", "/v1/completions", "/v1/models"):
        for status in ("2xx", "4xx"):
            http_requests.labels(handler, "POST", status).inc(rng.randint(1, 5000))
        http_size.labels(handler).observe(rng.randint(100, 20000))
        http_latency.labels(handler, "POST").observe(rng.random() * 2)

    if multiprocess:
        from prometheus_client import multiprocess as mp

        mp.MultiProcessCollector(registry)
    return generate_latest(registry).decode("utf-8")


def main() -> None:
    if len(sys.argv) == 3:
        engines, seed = int(sys.argv[1]), int(sys.argv[2])
        sys.stdout.write(build_payload(engines, seed))
        return
    env = dict(os.environ)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    single = subprocess.run(
        [sys.executable, __file__, "1", "0"], env=env, check=True, capture_output=True, text=True
    ).stdout
    (HERE / "vllm_1engine.prom").write_text(single)
    with tempfile.TemporaryDirectory() as mpdir:
        env["PROMETHEUS_MULTIPROC_DIR"] = mpdir
        multi = subprocess.run(
            [sys.executable, __file__, "8", "0"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    (HERE / "vllm_dp8.prom").write_text(multi)


if __name__ == "__main__":
    main()
