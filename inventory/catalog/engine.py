"""Catalog data: the vLLM engine metrics current vLLM emits (reference tables A and B).

Metrics it no longer emits are in `removed`.

Every name and date here is copied from /work/shared/reference/vllm-metrics.md;
`tests/inventory/test_catalog.py` checks that each name occurs there.
"""

from __future__ import annotations

from inventory.catalog.model import CatalogEntry, MetricName, engine_entry, v0_name

N = MetricName

# The 0.9.2 renames: both names side by side through 0.10.x, old one hidden in 0.11.
RENAME_092 = "renamed in 0.9.2, hidden from 0.11"
RENAME_092_REMOVED = "2025-11-25 (#29330)"
B125 = "buckets 1, 2, 5, 10, 20, 50, … up to max_model_len"
PREFIX_UNIT_NOTE = (
    "counted KV blocks until 2025-05-13 (#18003) and tokens afterwards; its HELP text says which"
)
SPEC = "a speculative-decoding config"  # also used by removed
KV_RESIDENCY = "--kv-cache-metrics (sampled by --kv-cache-metrics-sample)"
DIFFUSION = "a diffusion language model"


# Hand-laid table rows: the formatter would give every keyword its own line.
# fmt: off
SCHEDULER = (
    engine_entry(
        "running",
        N("vllm:num_requests_running", since="V1 2025-01"),
        type="gauge", unit="requests", category="queue",
        meaning="requests in the engine's running batch after its last step",
    ),
    engine_entry(
        "waiting",
        N("vllm:num_requests_waiting", since="V1 2025-01"),
        type="gauge", unit="requests", category="queue",
        meaning="requests held in the engine scheduler queue (not the API server's backlog)",
    ),
    engine_entry(
        "waiting_by_reason",
        N("vllm:num_requests_waiting_by_reason", since="2026-04-13 (#38435)"),
        type="gauge", unit="requests", category="queue", extra=("reason",),
        meaning="waiting requests split into capacity-blocked and deferred (LoRA, KV transfer)",
    ),
    engine_entry(
        "kv_usage",
        N("vllm:kv_cache_usage_perc", since="2025-06-14 (#18354)"),
        N("vllm:gpu_cache_usage_perc", until=RENAME_092_REMOVED, change=RENAME_092),
        type="gauge", unit="ratio", category="engine",
        meaning="share of KV-cache blocks in use, 0-1; idle prefix-cached blocks count as free",
    ),
    engine_entry(
        "sleep_state",
        N("vllm:engine_sleep_state", since="2025-10-29 (#24176)"),
        type="gauge", unit="none", category="engine", extra=("sleep_state",),
        meaning="one-hot sleep level: awake, weights_offloaded (level 1) or discard_all (level 2)",
    ),
    engine_entry(
        "cache_config",
        N("vllm:cache_config_info", since="V1 2025-02-22"),
        type="info", unit="none", category="engine",
        labels=(
            "engine", "block_size", "gpu_memory_utilization", "num_gpu_blocks",
            "enable_prefix_caching", "cache_dtype", "kv_cache_size_tokens",
            "kv_cache_max_concurrency",
        ),
        meaning="static KV-cache configuration as label values; the field set varies by version",
    ),
)

COUNTERS = (
    engine_entry(
        "prefix_queries",
        N("vllm:prefix_cache_queries_total", since="2025-06-14"),
        N("vllm:gpu_prefix_cache_queries_total", until=RENAME_092_REMOVED, change=RENAME_092,
          note=PREFIX_UNIT_NOTE),
        type="counter", unit="tokens", category="engine",
        meaning="prompt tokens looked up in the local prefix cache",
    ),
    engine_entry(
        "prefix_hits",
        N("vllm:prefix_cache_hits_total", since="2025-06-14"),
        N("vllm:gpu_prefix_cache_hits_total", until=RENAME_092_REMOVED, change=RENAME_092,
          note=PREFIX_UNIT_NOTE),
        type="counter", unit="tokens", category="engine",
        meaning="prompt tokens found in the local prefix cache",
    ),
    engine_entry(
        "external_prefix_queries",
        N("vllm:external_prefix_cache_queries_total", since="2025-10-23 (#26245)"),
        type="counter", unit="tokens", category="engine",
        meaning="prompt tokens looked up through a KV connector's cross-instance cache",
    ),
    engine_entry(
        "external_prefix_hits",
        N("vllm:external_prefix_cache_hits_total", since="2025-10-23 (#26245)"),
        type="counter", unit="tokens", category="engine",
        meaning="prompt tokens served from a KV connector's cross-instance cache",
    ),
    engine_entry(
        "mm_cache_queries",
        N("vllm:mm_cache_queries_total", since="2025-10-10 (#26285)"),
        type="counter", unit="items", category="engine",
        meaning="multimodal processor-cache lookups",
    ),
    engine_entry(
        "mm_cache_hits",
        N("vllm:mm_cache_hits_total", since="2025-10-10 (#26285)"),
        type="counter", unit="items", category="engine",
        meaning="multimodal processor-cache hits",
    ),
    engine_entry(
        "preemptions",
        N("vllm:num_preemptions_total", since="V1 2025-02"),
        type="counter", unit="events", category="engine",
        meaning="requests pushed out of the running batch to free KV blocks",
    ),
    engine_entry(
        "prompt_tokens",
        N("vllm:prompt_tokens_total", since="V1 2025-01"),
        type="counter", unit="tokens", category="traffic",
        meaning="prompt tokens of requests whose prefill finished, cached ones included",
    ),
    engine_entry(
        "prompt_tokens_by_source",
        N("vllm:prompt_tokens_by_source_total", since="2026-02-04 (#33290)"),
        type="counter", unit="tokens", category="engine", extra=("source",),
        meaning="prompt tokens split into computed, local-cache hit and external KV transfer",
    ),
    engine_entry(
        "prompt_tokens_cached",
        N("vllm:prompt_tokens_cached_total", since="2026-02-04"),
        type="counter", unit="tokens", category="engine",
        meaning="prompt tokens not computed because a local or external cache had them",
    ),
    engine_entry(
        "generation_tokens",
        N("vllm:generation_tokens_total", since="V1 2025-01"),
        type="counter", unit="tokens", category="traffic",
        meaning="output tokens generated",
    ),
    engine_entry(
        "request_success",
        N("vllm:request_success_total", since="V1 2025-02-05"),
        type="counter", unit="requests", category="traffic", extra=("finished_reason",),
        meaning="every finished request by reason, aborts and errors included despite the name",
    ),
    engine_entry(
        "mfu_flops",
        N("vllm:estimated_flops_per_gpu_total", since="2026-02-23 (#30950)"),
        type="counter", unit="flops", category="engine",
        meaning="estimated FLOPs per GPU; always registered, flat without --enable-mfu-metrics",
    ),
    engine_entry(
        "mfu_read_bytes",
        N("vllm:estimated_read_bytes_per_gpu_total", since="2026-02-23"),
        type="counter", unit="bytes", category="engine",
        meaning="estimated bytes read from GPU memory; flat without --enable-mfu-metrics",
    ),
    engine_entry(
        "mfu_write_bytes",
        N("vllm:estimated_write_bytes_per_gpu_total", since="2026-02-23"),
        type="counter", unit="bytes", category="engine",
        meaning="estimated bytes written to GPU memory; flat without --enable-mfu-metrics",
    ),
)

ITL_NOTE = "observed the same inter-token gaps as ITL; it was never a per-request average"

HISTOGRAMS = (
    engine_entry(
        "ttft",
        N("vllm:time_to_first_token_seconds", since="V1 2025-01"),
        type="histogram", unit="seconds", category="latency",
        meaning="API-server arrival to first token: tokenization, queueing and prefill",
    ),
    engine_entry(
        "itl",
        N("vllm:inter_token_latency_seconds", since="2025-09-02 (#24110)"),
        N("vllm:time_per_output_token_seconds", until="2026-01-20 (#32661)",
          change="renamed in 0.11", note=ITL_NOTE),
        type="histogram", unit="seconds", category="latency",
        meaning="gap between successive engine outputs of a request, one observation per step",
    ),
    engine_entry(
        "request_tpot",
        N("vllm:request_time_per_output_token_seconds", since="2025-09-24 (#24015)"),
        type="histogram", unit="seconds", category="latency",
        meaning="per finished request: decode time divided by (output tokens - 1)",
        confusable=(N("vllm:time_per_output_token_seconds", note=ITL_NOTE),),
    ),
    engine_entry(
        "e2e",
        N("vllm:e2e_request_latency_seconds", since="V1 2025-01"),
        type="histogram", unit="seconds", category="latency",
        meaning="API-server arrival to final output, per finished request",
    ),
    engine_entry(
        "queue_time",
        N("vllm:request_queue_time_seconds", since="V1 2025-01"),
        v0_name("vllm:time_in_queue_requests", change="V0 duplicate, deprecated in 0.8"),
        type="histogram", unit="seconds", category="latency",
        meaning="engine queued to first scheduled; re-queueing after preemption is not added",
    ),
    engine_entry(
        "prefill_time",
        N("vllm:request_prefill_time_seconds", since="V1 2025-01"),
        type="histogram", unit="seconds", category="latency",
        meaning="first scheduled to first token, preemptions during prefill included",
    ),
    engine_entry(
        "decode_time",
        N("vllm:request_decode_time_seconds", since="V1 2025-01"),
        type="histogram", unit="seconds", category="latency",
        meaning="first token to last token, preemptions during decode included",
    ),
    engine_entry(
        "inference_time",
        N("vllm:request_inference_time_seconds", since="V1 2025-01"),
        type="histogram", unit="seconds", category="latency",
        meaning="first scheduled to last token",
    ),
    engine_entry(
        "prompt_len",
        N("vllm:request_prompt_tokens", since="V1 2025-01", note=B125),
        type="histogram", unit="tokens", category="traffic",
        meaning="prompt length per finished request",
    ),
    engine_entry(
        "output_len",
        N("vllm:request_generation_tokens", since="V1 2025-01", note=B125),
        type="histogram", unit="tokens", category="traffic",
        meaning="output length per finished request",
    ),
    engine_entry(
        "max_generation_tokens",
        N("vllm:request_max_num_generation_tokens", note=B125),
        type="histogram", unit="tokens", category="traffic",
        meaning="longest output among a request's sequences (equals output length when n=1)",
    ),
    engine_entry(
        "params_max_tokens",
        N("vllm:request_params_max_tokens", note=B125),
        type="histogram", unit="tokens", category="traffic",
        meaning="the max_tokens a request asked for, observed only when set",
    ),
    engine_entry(
        "params_n",
        "vllm:request_params_n",
        type="histogram", unit="items", category="traffic",
        meaning="the n (parallel sequences) a request asked for",
    ),
    engine_entry(
        "prefill_kv_computed",
        N("vllm:request_prefill_kv_computed_tokens", since="2025-12-08 (#30189)", note=B125),
        type="histogram", unit="tokens", category="engine",
        meaning="prompt tokens actually computed (prompt minus cached) per finished request",
    ),
    engine_entry(
        "iteration_tokens",
        N("vllm:iteration_tokens_total", since="V1 2025-01",
          note="a histogram despite the _total suffix; KV-transferred tokens excluded since "
          "2026-05-29; may be wrong with several API servers"),
        type="histogram", unit="tokens", category="engine",
        meaning="tokens processed per engine step (computed prompt plus generated)",
    ),
)

FLAG_GATED = (
    engine_entry(
        "lora_info",
        N("vllm:lora_requests_info", since="V1 2025-02-25"),
        type="info", unit="timestamp", category="engine", requires="--enable-lora",
        labels=("max_lora", "running_lora_adapters", "waiting_lora_adapters"),
        meaning="LoRA slots and the comma-joined running/waiting adapters; value is update time",
    ),
    engine_entry(
        "corrupted_requests",
        N("vllm:corrupted_requests_total", since="2025-11-06"),
        type="counter", unit="requests", category="quality",
        requires="env VLLM_COMPUTE_NANS_IN_LOGITS=1",
        meaning="finished requests whose logits contained NaNs",
    ),
    engine_entry(
        "kv_block_lifetime",
        N("vllm:kv_block_lifetime_seconds", since="2025-12-01"),
        type="histogram", unit="seconds", category="engine", requires=KV_RESIDENCY,
        meaning="allocation to eviction of sampled KV blocks",
    ),
    engine_entry(
        "kv_block_idle_before_evict",
        N("vllm:kv_block_idle_before_evict_seconds", since="2025-12-01"),
        type="histogram", unit="seconds", category="engine", requires=KV_RESIDENCY,
        meaning="last access to eviction of sampled KV blocks",
    ),
    engine_entry(
        "kv_block_reuse_gap",
        N("vllm:kv_block_reuse_gap_seconds", since="2025-12-01"),
        type="histogram", unit="seconds", category="engine", requires=KV_RESIDENCY,
        meaning="time between consecutive accesses to a sampled KV block",
    ),
    engine_entry(
        "spec_decode_drafts",
        N("vllm:spec_decode_num_drafts_total", since="2025-04-24"),
        type="counter", unit="events", category="engine", requires=SPEC,
        meaning="speculative draft rounds",
    ),
    engine_entry(
        "spec_decode_draft_tokens",
        N("vllm:spec_decode_num_draft_tokens_total", since="2025-04-24"),
        type="counter", unit="tokens", category="engine", requires=SPEC,
        meaning="tokens proposed by the drafter",
    ),
    engine_entry(
        "spec_decode_accepted_tokens",
        N("vllm:spec_decode_num_accepted_tokens_total", since="2025-04-24"),
        type="counter", unit="tokens", category="engine", requires=SPEC,
        meaning="draft tokens the target model accepted",
    ),
    engine_entry(
        "spec_decode_accepted_per_pos",
        N("vllm:spec_decode_num_accepted_tokens_per_pos_total", since="2025-04-24"),
        type="counter", unit="tokens", category="engine", requires=SPEC, extra=("position",),
        meaning="accepted draft tokens by position within the draft",
    ),
    engine_entry(
        "diffusion_denoising_steps",
        N("vllm:diffusion_num_denoising_steps_total", since="2026-06-12"),
        type="counter", unit="events", category="engine", requires=DIFFUSION,
        meaning="denoising steps run by a diffusion LM",
    ),
    engine_entry(
        "diffusion_canvas_positions",
        N("vllm:diffusion_num_canvas_positions_total", since="2026-06-12"),
        type="counter", unit="tokens", category="engine", requires=DIFFUSION,
        meaning="canvas positions a diffusion LM worked on",
    ),
    engine_entry(
        "diffusion_committed_tokens",
        N("vllm:diffusion_num_committed_tokens_total", since="2026-06-12"),
        type="counter", unit="tokens", category="engine", requires=DIFFUSION,
        meaning="tokens a diffusion LM committed to its output",
    ),
)

# fmt: on

ENTRIES: tuple[CatalogEntry, ...] = SCHEDULER + COUNTERS + HISTOGRAMS + FLAG_GATED
