"""Runbook bodies of the TTFT and TPOT leaves. Metric names are vLLM's and DCGM's own (the
project's metrics reference, sections 3-5, 9-11); nothing here is applied by FleetScope."""

from __future__ import annotations

SAFE = "FleetScope never applies anything: each action below is for a person to decide and do."

TTFT_QUEUE_LOAD = f"""
# Signal
TTFT is up and most of it is engine queue time: the mean of `vllm:request_queue_time_seconds`
is the largest share of `vllm:time_to_first_token_seconds`, `vllm:num_requests_waiting` rises
with `vllm:num_requests_waiting_by_reason{{reason="capacity"}}`, and the request rate (rate of
`vllm:request_success_total`) is above its baseline on every replica, not one.

# Checks
1. Compare the request rate and `vllm:request_prompt_tokens` / `vllm:request_generation_tokens`
   with the baseline window: more requests, or the same requests asking for more tokens?
2. Check that all replicas of the model queue alike (a single replica queueing is a
   straggler or routing problem, not load).
3. Check `vllm:kv_cache_usage_perc`: near 1 means the KV-capacity leaf, not this one.
4. Look at the walk's changes: did the replica count drop around the breach start?

# Safe actions
{SAFE}
- Add one replica of the model (or restore the lost one) and watch queue time.
- Ask the gateway owners to rate-limit or defer batch traffic while the fleet catches up.
- Record the new peak load in the capacity review (N+1).
"""

TTFT_QUEUE_KV_CAPACITY = f"""
# Signal
Requests wait for KV blocks: `vllm:kv_cache_usage_perc` sits near 1,
`vllm:num_requests_waiting_by_reason{{reason="capacity"}}` is above 0, and a rising
`vllm:num_preemptions_total` shows the cache thrashing. Queue time
(`vllm:request_queue_time_seconds`) carries the TTFT increase.

# Checks
1. Compare `vllm:cache_config_info` (num_gpu_blocks, gpu_memory_utilization,
   kv_cache_size_tokens) with the baseline and between replicas: did a config change shrink
   the cache?
2. Did prompts or outputs get longer (`vllm:request_prompt_tokens`,
   `vllm:request_generation_tokens`)? Longer sequences hold blocks longer.
3. Check the prefix hit ratio, `rate(vllm:prefix_cache_hits_total[5m]) /
   rate(vllm:prefix_cache_queries_total[5m])`: cached prefix blocks nobody references count
   as free, so a falling hit ratio is a different leaf.

# Safe actions
{SAFE}
- On one canary replica, lower the concurrent sequence limit (`max_num_seqs`, a CLI value
  that no metric exposes) or raise `gpu_memory_utilization`, one variable at a time.
- Add a replica if the cache is full at the current load on every replica.
- Revert a cache configuration change if the walk lists one.
"""

TTFT_QUEUE_LORA_DEFERRED = f"""
# Signal
Requests are held back, not for KV blocks:
`vllm:num_requests_waiting_by_reason{{reason="deferred"}}` is above 0 (LoRA slots or KV
transfers in flight), while `vllm:kv_cache_usage_perc` has room. `vllm:lora_requests_info`
lists the adapters in its `running_lora_adapters` and `waiting_lora_adapters` labels.

# Checks
1. Read the newest `vllm:lora_requests_info` series per replica: which adapters wait, and
   is `max_lora` smaller than the number of adapters in use?
2. vLLM has no per-adapter latency or token metrics (adapters are not in `model_name`):
   ask the tenants of the waiting adapters whether their traffic changed.
3. With a KV connector configured, check whether transfers are slow rather than LoRA slots.

# Safe actions
{SAFE}
- On one canary replica, raise the LoRA slot count (`max_lora`) within the memory budget.
- Route the hot adapters to dedicated replicas, so cold ones stop evicting them.
"""

TTFT_PREFILL_LONG_PROMPTS = f"""
# Signal
TTFT is up and prefill carries it: `vllm:request_prefill_time_seconds` grows, not queue
time, and `vllm:request_prompt_tokens` shifts to longer prompts (the rate of
`vllm:prompt_tokens_total` per request rises).

# Checks
1. Compare the prompt-length distribution with the baseline window. Bucket edges of
   `vllm:request_prompt_tokens` depend on `max_model_len`: compare replicas with equal edges.
2. Which tenant or route sends the long prompts? vLLM has no per-tenant labels, so ask the
   gateway or the clients.
3. Check `vllm:iteration_tokens_total`: large prefill steps also slow the decode of others.

# Safe actions
{SAFE}
- On one canary replica, change the prefill chunk size (`max_num_batched_tokens`) and
  compare TTFT and inter-token latency.
- Route long-prompt traffic to replicas sized for it, or agree a prompt budget with the
  tenant.
"""

TTFT_PREFILL_CACHE_MISS = f"""
# Signal
Prefill does more work because the prefix cache stopped hitting: the hit ratio
`rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m])` falls,
and the share of `vllm:prompt_tokens_by_source_total{{source="local_compute"}}` rises against
`local_cache_hit`. `vllm:request_prefill_kv_computed_tokens` per request grows.

# Checks
1. Did replicas restart (an empty cache) or did `vllm:cache_config_info` change
   (`enable_prefix_caching`)?
2. Did routing change? Prefix-aware routing that now spreads a conversation over replicas
   loses its hits.
3. Did the clients change their prompt template (a new system prompt, a timestamp at the
   start)?

# Safe actions
{SAFE}
- Restore the previous routing policy or prompt template, on one canary route first.
- Re-enable prefix caching on one canary replica if it was turned off.
"""

TTFT_FRONTEND = f"""
# Signal
TTFT is up but neither queue time (`vllm:request_queue_time_seconds`) nor prefill time
(`vllm:request_prefill_time_seconds`) explains it: the remainder of
`vllm:time_to_first_token_seconds` is frontend time (tokenization, chat template,
multimodal preprocessing, the API-to-engine hand-off). vLLM has no metric for it, so this
leaf is an inference from the remainder.

# Checks
1. Multimodal traffic? Compare `vllm:mm_cache_hits_total` / `vllm:mm_cache_queries_total`.
2. API-server CPU: `process_cpu_seconds_total` (present only with a single API server).
3. `http_request_duration_seconds` has three buckets and includes streaming: do not read
   TTFT from it.
4. vLLM exposes no API-server queue depth; check the gateway for requests waiting there.

# Safe actions
{SAFE}
- Add API-server processes on one canary replica, or move preprocessing off it.
- Ask the client owners whether inputs changed (images, much longer chat histories).
"""

TPOT_STEP_WORK = f"""
# Signal
Each token takes longer because each engine step does more work: the step-level
`vllm:inter_token_latency_seconds` rises together with the per-request
`vllm:request_time_per_output_token_seconds`, `vllm:iteration_tokens_total` shows larger
steps, and `vllm:num_requests_running` sits at its ceiling. `DCGM_FI_PROF_DRAM_ACTIVE` near 1
shows a memory-bandwidth-bound decode.

# Checks
1. Compare `vllm:num_requests_running` with the configured `max_num_seqs` (a CLI value, not
   a metric).
2. Are long prefills sharing steps with decodes (`vllm:iteration_tokens_total` buckets)?
3. vLLM has no engine step-time histogram at the pin: the inter-token latency is the
   nearest measure.

# Safe actions
{SAFE}
- On one canary replica, lower `max_num_seqs` or `max_num_batched_tokens` and compare
  inter-token latency and throughput.
- Add a replica if the batch is full on every replica at the current load.
"""

TPOT_PREEMPTION = f"""
# Signal
Running requests are preempted and recomputed: the rate of `vllm:num_preemptions_total`
rises, `vllm:kv_cache_usage_perc` is near 1, and `vllm:request_decode_time_seconds` grows
(preemptions during decode are included in it).

# Checks
1. Which replicas preempt? Compare with their peers and their `vllm:cache_config_info`.
2. Did outputs get longer (`vllm:request_generation_tokens`,
   `vllm:request_params_max_tokens`)?

# Safe actions
{SAFE}
- On one canary replica, lower `max_num_seqs` so the running batch fits the cache.
- Raise `gpu_memory_utilization` on a canary if the GPU has headroom
  (`DCGM_FI_DEV_FB_FREE`).
"""

TPOT_STRAGGLER_GPU_THROTTLE = f"""
# Signal
One replica is slow and its peers are not: its `vllm:inter_token_latency_seconds` stands out
while its GPUs run at lower clocks (`DCGM_FI_DEV_SM_CLOCK`) and higher temperature
(`DCGM_FI_DEV_GPU_TEMP`, `DCGM_FI_DEV_MEMORY_TEMP`) or power (`DCGM_FI_DEV_POWER_USAGE`)
than the same GPUs elsewhere.

# Checks
1. Join DCGM to vLLM through the pod labels (vLLM exports no GPU UUID or host name).
2. `DCGM_FI_DEV_XID_ERRORS` and the remapped-row counters for hardware faults.
3. The power and thermal violation counters are off in dcgm-exporter's default CSV: if they
   are missing, the clock and temperature comparison is the evidence.

# Safe actions
{SAFE}
- Take the replica out of the router (drain), then open a hardware ticket for its node.
- Replace it with a replica on another node before returning it to service.
"""

TPOT_COLLECTIVE = f"""
# Signal
Decode slows on a tensor-parallel replica while its GPUs are not throttled: collective
traffic between GPUs is the suspect. `DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL` changes against
its peers, `DCGM_FI_DEV_PCIE_REPLAY_COUNTER` rises, and `DCGM_FI_PROF_PCIE_TX_BYTES` /
`DCGM_FI_PROF_PCIE_RX_BYTES` move (bytes per second in exporter 4.0+, byte counters before).

# Checks
1. Are all GPUs of the replica affected alike (a link), or one (a GPU)?
2. The NVLink CRC, replay and recovery error counters need a custom dcgm-exporter CSV:
   note their absence rather than reading it as zero.
3. Did the replica move to another node, or change its parallel layout?

# Safe actions
{SAFE}
- Move the replica to another node (one replica, as a canary) and compare.
- Open a hardware ticket with the link counters for the node.
"""
