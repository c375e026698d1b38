"""Runbook bodies of the availability, quality, inventory and healthy leaves. Metric names
are vLLM's, the production-stack router's and DCGM's own (the project's metrics reference,
sections 3-5, 7.4, 9-11); nothing here is applied by FleetScope."""

from __future__ import annotations

from triage.runbooks.latency import SAFE

AVAILABILITY_REPLICA_DOWN = f"""
# Signal
A replica stopped answering its scrapes, or reports itself asleep: FleetScope's scrape of
the endpoint fails (the inventory page says why), `vllm:engine_sleep_state{{sleep_state="awake"}}`
is 0, or the router's `vllm:healthy_pods_total` drops to 0 for that backend.

# Checks
1. The replica's own logs and the orchestrator's events: OOM kill, crash loop, eviction.
2. `DCGM_FI_DEV_XID_ERRORS` on its GPUs for a hardware fault.
3. `process_start_time_seconds` (single API server only) for restarts.
4. Do the remaining replicas absorb the traffic (queue time, `vllm:num_requests_waiting`)?

# Safe actions
{SAFE}
- Restart or reschedule the replica through the orchestrator.
- Keep it out of the router until its scrape and health check pass again.
"""

AVAILABILITY_RETRY_STORM = f"""
# Signal
Requests multiply while useful work does not: the engines' request rate rises, aborted
finishes grow (`vllm:request_success_total{{finished_reason="abort"}}`: clients giving up
and retrying), and `http_requests_total{{status="5xx"}}` or `{{status="4xx"}}` climbs. At the
router, `vllm:num_incoming_requests_total` outruns completed requests.

# Checks
1. Did a client release change its timeout or retry policy? vLLM has no per-client labels:
   ask the gateway.
2. Are 429 or 503 responses feeding the retries (`http_requests_total` by `status`)?
3. Did a short outage start it (a replica down at the breach start)?

# Safe actions
{SAFE}
- Ask the client owners for exponential backoff with jitter and a retry budget.
- Ask the gateway owners to rate-limit the retrying client while the fleet recovers.
"""

AVAILABILITY_GATEWAY_ERRORS = f"""
# Signal
The gateway fails requests that the engines never see or finish fine: the router's
`vllm:request_errors_total` (by `error_type`) and
`vllm:request_latency_seconds{{status="error"}}` rise, while the engines'
`http_requests_total{{status="5xx"}}` and `vllm:request_success_total` look normal.

# Checks
1. Which `error_type`? Connection errors point at routing or discovery, timeouts at load.
2. `vllm:healthy_pods_total`: does the router still see every backend?
3. Did the gateway's configuration or version change at the breach start?

# Safe actions
{SAFE}
- Roll back the gateway change on one gateway instance first.
- Route around a failing gateway instance.
"""

QUALITY_ARTIFACT_REGRESSION = f"""
# Signal
Answers changed after an artifact changed (weights, tokenizer, chat template, engine
version): the finish-reason mix of `vllm:request_success_total` shifts (more `length` or
`repetition`), `vllm:request_generation_tokens` moves, and with speculative decoding the
acceptance rate `rate(vllm:spec_decode_num_accepted_tokens_total[5m]) /
rate(vllm:spec_decode_num_draft_tokens_total[5m])` drops. `vllm:corrupted_requests_total`
counts NaN logits when enabled.

# Checks
1. The walk's changes: restarts, version or dialect changes at the breach start.
2. Compare the changed replicas with peers still on the previous artifact.
3. Replay a small fixed prompt set against both and compare the outputs.

# Safe actions
{SAFE}
- Roll back the artifact on one canary replica and compare the finish-reason mix.
- Stop the rollout until the comparison is done.
"""

INVENTORY_VERSION_SKEW = f"""
# Signal
Replicas serving the same model run different vLLM versions or configurations. vLLM exposes
no version metric: FleetScope infers it from metric names and renames (the dialect per
replica on the inventory page), from `vllm:cache_config_info` fields, and from histogram
bucket edges (`vllm:request_prompt_tokens` edges follow `max_model_len`).

# Checks
1. The inventory drift report: which replicas differ, since when.
2. Is a rollout in progress, stalled, or partly rolled back?
3. Do the differing replicas also differ in latency from their peers?

# Safe actions
{SAFE}
- Finish or roll back the rollout so one model runs one version.
- Until then, compare panels per dialect rather than across the fleet.
"""

HEALTHY = f"""
# Signal
The walk found no leaf whose evidence holds: the breach it read does not stand out against
its baseline, or every cause it can test is ruled out.

# Checks
1. Read the breach: is the SLO threshold tighter than the fleet has ever met?
2. Read the nodes marked insufficient: what evidence was missing?
3. What vLLM cannot show: tokenization time, per-tenant or per-adapter latency, admission
   failures outside `http_requests_total`, configured limits such as `max_num_seqs`.
4. Look outside the fleet: clients, network, the gateway.

# Safe actions
{SAFE}
- Keep the incident open and walk again when more data has arrived.
- Add the missing metrics (dcgm-exporter, the router) so the next walk can decide.
"""
