"""The scenarios that inject one failure each, with the signals their ground truth names."""

from __future__ import annotations

from fleetsim.scenarios import machine, traffic
from fleetsim.scenarios import signals_text as why
from fleetsim.scenarios.model import (
    BY_REASON,
    ITL,
    TTFT,
    WAITING,
    Scenario,
    Signal,
    down,
    first,
    first_model,
    up,
)
from fleetsim.scenarios.triage import TRIAGE

BASE: tuple[Scenario, ...] = (
    Scenario("steady", "Diurnal traffic with ordinary bursts; nothing is wrong.",
             "healthy", 600.0, (), lambda fleet: [], lambda *a: None),
    Scenario("traffic-burst", "Interactive tenants flood the model with about twice what "
             "its replicas can serve: queues build.",
             "ttft.queue.load", 600.0,
             (up(WAITING, "gauge", 1.0, 5.0, why.QUEUE_GROWS),
              up("vllm:request_queue_time_seconds", "mean", 1.0, 0.1, why.QUEUE_WAIT),
              up(TTFT, "mean", 0.5, 0.1, why.TTFT_QUEUE)),
             first_model, traffic.traffic_burst),
    Scenario("long-prompt-surge", "A RAG tenant starts sending long contexts: prefill "
             "dominates and co-scheduled decodes slow down.",
             "ttft.prefill.long_prompts", 600.0,
             (up("vllm:request_prompt_tokens", "mean", 0.1, 300.0, why.SURGE_PROMPT),
              up("vllm:request_prefill_time_seconds", "mean", 0.3, 0.05, why.SURGE_PREFILL),
              up(TTFT, "mean", 0.3, 0.05, why.SURGE_PREFILL),
              up(ITL, "mean", 0.15, 0.002, why.SURGE_ITL)),
             first_model, traffic.long_prompt_surge),
    Scenario("kv-pressure", "A batch job with long prompts and outputs fills the KV cache: "
             "preemptions and recomputation.",
             "ttft.queue.kv_capacity", 600.0,
             (up("vllm:kv_cache_usage_perc", "gauge", 0.5, 0.3, why.KV_FULL, aggregate="max"),
              up("vllm:num_preemptions_total", "rate", 1.0, 0.01, why.KV_PREEMPT),
              up(BY_REASON, "gauge", 1.0, 1.0, why.KV_WAIT, labels={"reason": "capacity"},
                  instead=up(WAITING, "gauge", 1.0, 1.0, why.KV_WAIT)),
              up("vllm:request_time_per_output_token_seconds", "mean", 0.2, 0.002, why.KV_TPOT,
                  instead=up(ITL, "mean", 0.2, 0.002, why.KV_TPOT))),
             first, traffic.kv_pressure),
    Scenario("cold-restart", "A rollout restarts the replicas one after another: counters "
             "reset, prefix caches start empty.",
             "ttft.prefill.cache_miss", 600.0,
             (down("up", "up", 0.0, 0.5, why.RESTART_UP, peak="min"),
              Signal("process_start_time_seconds", "changes", "present", why=why.RESTART_START),
              Signal("vllm:prompt_tokens_total", "reset", "present", why=why.RESTART_RESET),
              down("vllm:prefix_cache_hits_total", "ratio", 0.2, 0.02, why.RESTART_HITS,
                    denominator="vllm:prefix_cache_queries_total", peak="min",
                    instead=down("vllm:gpu_prefix_cache_hit_rate", "gauge", 0.2, 0.02,
                                  why.RESTART_HITS, peak="min", aggregate="avg")),
              up(TTFT, "mean", 0.5, 0.05, why.RESTART_TTFT, peak="max")),
             first_model, machine.cold_restart),
    Scenario("tokenizer-saturation", "The API server's CPU is starved: tokenization queues "
             "in the front end while the engine's queue and prefill stay flat.",
             "ttft.frontend", 600.0,
             (up(TTFT, "mean", 0.5, 0.1, why.FRONTEND_TTFT),
              Signal("vllm:request_queue_time_seconds", "mean", "not_up", 0.5, 0.05,
                     why.FRONTEND_ENGINE),
              Signal("vllm:request_prefill_time_seconds", "mean", "not_up", 0.5, 0.05,
                     why.FRONTEND_ENGINE),
              up("process_cpu_seconds_total", "rate", 0.3, 0.05, why.FRONTEND_CPU)),
             first, traffic.tokenizer_saturation),
    Scenario("gpu-throttle", "One replica's GPU slows down (power brake and heat): clocks "
             "and power drop, its inter-token latency rises: a straggler.",
             "tpot.straggler.gpu_throttle", 900.0,
             (down("DCGM_FI_DEV_SM_CLOCK", "gauge", 0.3, 100.0, why.THROTTLE_CLOCK,
                    aggregate="avg"),
              down("DCGM_FI_DEV_POWER_USAGE", "gauge", 0.2, 20.0, why.THROTTLE_POWER),
              up("DCGM_FI_DEV_GPU_TEMP", "gauge", 0.0, 5.0, why.THROTTLE_TEMP, aggregate="avg"),
              up(ITL, "mean", 0.1, 0.001, why.THROTTLE_ITL)),
             first, machine.gpu_throttle),
    Scenario("collective-degradation", "An NVLink in a tensor-parallel group degrades "
             "(XID 74, CRC errors, replays, recoveries): every all-reduce slows and so "
             "does every token.",
             "tpot.collective", 600.0,
             (up("DCGM_FI_DEV_XID_ERRORS", "gauge", 0.0, 50.0, why.LINK_XID),
              up("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "rate", 0.0, 0.01,
                  why.LINK_ERRORS),
              up("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "rate", 0.0, 0.005,
                  why.LINK_ERRORS),
              up("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "rate", 0.0, 0.01,
                  why.LINK_ERRORS),
              up("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "rate", 0.0, 0.02,
                  why.LINK_RECOVERY),
              down("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "rate", 0.2, 0.0, why.LINK_BYTES,
                    gpus=machine.FAILING_LINK_GPUS),
              up("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", 1.0, 1e7, why.LINK_PCIE),
              up(ITL, "mean", 0.1, 0.001, why.LINK_ITL)),
             machine.tp_group, machine.collective_degradation, machine.need_tp),
    Scenario("replica-down", "A replica's server dies; its port refuses connections until "
             "it restarts.",
             "availability.replica_down", 300.0,
             (down("up", "up", 0.0, 0.5, why.DOWN_UP),
              up("fleetscope_gateway_requests_total", "rate", 0.0, 0.02, why.DOWN_5XX,
                  scope="gateway", labels={"status": "5xx"}, within_s=60.0)),
             first, machine.replica_down),
    Scenario("version-skew", "One replica is rolled back to the next older vLLM: its "
             "metric names and buckets differ from the rest of the fleet.",
             "inventory.version_skew", 900.0, (),
             first, machine.version_skew, machine.need_older,
             incident_dialect=machine.skewed, signals_of=machine.skew_signals),
    Scenario("lora-thrash", "A tenant's adapter working set outgrows max_loras: requests "
             "wait as deferred while adapters swap.",
             "ttft.queue.lora_deferred", 600.0,
             (up(BY_REASON, "gauge", 1.0, 1.0, why.LORA_WAIT, labels={"reason": "deferred"},
                  instead=up(WAITING, "gauge", 1.0, 1.0, why.LORA_WAIT)),
              up(TTFT, "mean", 0.3, 0.05, why.LORA_TTFT)),
             machine.first_lora, traffic.lora_thrash, machine.need_lora),
)  # fmt: skip

SCENARIOS: dict[str, Scenario] = {s.name: s for s in BASE + TRIAGE}
