"""Catalog data: engine metrics current vLLM no longer emits (reference section 6).

They stay in the catalog so an old fleet's names are recognised, dialect
detection can date a server by them, and `resolve` can say what replaced them.
"""

from __future__ import annotations

from inventory.catalog.engine import SPEC
from inventory.catalog.model import CatalogEntry, MetricName, engine_entry, v0_name

N = MetricName
NO_SWAP = "CPU swap does not exist in V1: no replacement"
V0_SPEC = "V0 speculative decoding only"

# Hand-laid table rows: the formatter would give every keyword its own line.
# fmt: off
ENTRIES: tuple[CatalogEntry, ...] = (
    engine_entry(
        "swapped",
        v0_name("vllm:num_requests_swapped", note=NO_SWAP),
        type="gauge", unit="requests", category="queue", labels=("model_name",),
        meaning="V0 requests swapped out to CPU memory",
    ),
    engine_entry(
        "cpu_kv_usage",
        v0_name("vllm:cpu_cache_usage_perc", note=NO_SWAP),
        type="gauge", unit="ratio", category="engine", labels=("model_name",),
        meaning="V0 share of the CPU swap space in use",
    ),
    engine_entry(
        "prefix_hit_rate",
        v0_name("vllm:gpu_prefix_cache_hit_rate", until="2025-05-28 (#18837)"),
        type="gauge", unit="ratio", category="engine", labels=("model_name",),
        meaning="V0 prefix-cache hit rate on GPU, computed inside the server",
        derivation="rate(vllm:prefix_cache_hits_total[5m]) / "
        "rate(vllm:prefix_cache_queries_total[5m])",
    ),
    engine_entry(
        "cpu_prefix_hit_rate",
        v0_name("vllm:cpu_prefix_cache_hit_rate", until="2025-05-28 (#18837)"),
        type="gauge", unit="ratio", category="engine", labels=("model_name",),
        meaning="V0 prefix-cache hit rate for the CPU tier",
    ),
    engine_entry(
        "prompt_tokens_recomputed",
        N("vllm:prompt_tokens_recomputed", since="2026-02-04", until="2026-04-12 (#38709)",
          change="replaced by vllm:prompt_tokens_by_source_total",
          note="only builds from that window have it; the reference does not pin its wire suffix"),
        type="counter", unit="tokens", category="engine",
        meaning="prompt tokens computed again (short-lived predecessor of the by-source split)",
    ),
    engine_entry(
        "avg_prompt_throughput",
        v0_name("vllm:avg_prompt_throughput_toks_per_s", until="2025-01-25 (#12383)",
                change="V0 only"),
        type="gauge", unit="tokens_per_second", category="traffic", labels=("model_name",),
        meaning="V0 prompt throughput averaged over the log interval",
        derivation="rate(vllm:prompt_tokens_total[5m])",
    ),
    engine_entry(
        "avg_generation_throughput",
        v0_name("vllm:avg_generation_throughput_toks_per_s", until="2025-01-25 (#12383)",
            change="V0 only"),
        type="gauge", unit="tokens_per_second", category="traffic", labels=("model_name",),
        meaning="V0 generation throughput averaged over the log interval",
        derivation="rate(vllm:generation_tokens_total[5m])",
    ),
    engine_entry(
        "model_forward_time",
        v0_name("vllm:model_forward_time_milliseconds"),
        type="histogram", unit="milliseconds", category="latency", labels=("model_name",),
        requires="detailed tracing (V0)",
        meaning="V0 model forward-pass time per step",
    ),
    engine_entry(
        "model_execute_time",
        v0_name("vllm:model_execute_time_milliseconds"),
        type="histogram", unit="milliseconds", category="latency", labels=("model_name",),
        requires="detailed tracing (V0)",
        meaning="V0 model execute time per step, forward pass plus overheads",
    ),
    engine_entry(
        "params_best_of",
        v0_name("vllm:request_params_best_of", until="2024-10-10 (#9261)", change="V0 only"),
        type="histogram", unit="items", category="traffic", labels=("model_name",),
        meaning="the best_of a V0 request asked for",
    ),
    engine_entry(
        "spec_decode_acceptance_rate",
        v0_name("vllm:spec_decode_draft_acceptance_rate", until="2025-07-18",
            change=V0_SPEC),
        type="gauge", unit="ratio", category="engine", labels=("model_name",), requires=SPEC,
        meaning="V0 share of draft tokens accepted",
        derivation="rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / "
        "rate(vllm:spec_decode_num_draft_tokens_total[5m])",
    ),
    engine_entry(
        "spec_decode_efficiency",
        v0_name("vllm:spec_decode_efficiency", until="2025-07-18",
            change=V0_SPEC),
        type="gauge", unit="ratio", category="engine", labels=("model_name",), requires=SPEC,
        meaning="V0 emitted tokens relative to the best case for the draft length",
        derivation="1 + rate(vllm:spec_decode_num_accepted_tokens_total[5m]) / "
        "rate(vllm:spec_decode_num_drafts_total[5m]) (mean acceptance length)",
    ),
    engine_entry(
        "spec_decode_emitted_tokens",
        v0_name("vllm:spec_decode_num_emitted_tokens_total", until="2025-07-18",
            change=V0_SPEC),
        type="counter", unit="tokens", category="engine", labels=("model_name",), requires=SPEC,
        meaning="V0 tokens emitted by speculative decoding",
    ),
    engine_entry(
        "total_tokens",
        v0_name("vllm:tokens_total", until="2025-03-03 (#14134)", change="V0 only",
                note="declared but never populated: always 0"),
        type="counter", unit="tokens", category="traffic", labels=("model_name",),
        meaning="V0 prefill plus generation tokens, never actually counted",
        derivation="vllm:prompt_tokens_total + vllm:generation_tokens_total",
    ),
)
# fmt: on
