"""Catalog data: numbers a triage dashboard wants that vLLM does not expose (reference section 11).

They are entries without names so that a panel asking for one gets a clear
"vLLM does not expose this" from `resolve`, plus a way to approximate it.
"""

from __future__ import annotations

from inventory.catalog.model import CatalogEntry, Category, MetricType, Unit, entry

NO_LIMITS = (
    "configured limits are CLI values, not metrics (cache_config_info has only cache fields)"
)


def _gap(
    key: str,
    *,
    type: MetricType,
    unit: Unit,
    category: Category,
    meaning: str,
    gap: str,
    derivation: str = "",
) -> CatalogEntry:
    return entry(
        key,
        source_kind="engine",
        type=type,
        unit=unit,
        category=category,
        meaning=meaning,
        gap=gap,
        derivation=derivation,
    )


# Hand-laid table rows: the formatter would give every keyword its own line.
# fmt: off
ENTRIES: tuple[CatalogEntry, ...] = (
    _gap("frontend_time", type="histogram", unit="seconds", category="latency",
         meaning="tokenization, chat templating, multimodal preprocessing and engine hand-off",
         gap="frontend time has no metric; it hides inside TTFT and e2e",
         derivation="mean TTFT - mean queue_time - mean prefill_time "
                    "(each as rate(_sum) / rate(_count))"),
    _gap("engine_step_time", type="histogram", unit="seconds", category="latency",
         meaning="wall time of one engine step / forward pass",
         gap="no step-time histogram at the pin (V0's were removed; "
             "iteration_tokens counts tokens, not time)"),
    _gap("frontend_inflight", type="gauge", unit="requests", category="queue",
         meaning="requests accepted by the API server but not yet in the engine",
         gap="no API-server queue depth; num_requests_waiting is the engine scheduler queue"),
    _gap("request_rejections", type="counter", unit="requests", category="quality",
         meaning="requests refused before reaching the engine (too long, overload)",
         gap="no admission-failure counter in the vllm: family",
         derivation='http_requests_total{status=~"4xx|5xx"} (no model label)'),
    _gap("lora_adapter_latency", type="histogram", unit="seconds", category="latency",
         meaning="latency and tokens per LoRA adapter",
         gap="adapters are not in model_name; only lora_requests_info names running ones"),
    _gap("tenant_usage", type="counter", unit="tokens", category="traffic",
         meaning="traffic and latency per tenant, user, API key or priority",
         gap="no per-tenant, per-user, per-API-key or per-priority labels anywhere"),
    _gap("max_num_seqs", type="gauge", unit="requests", category="engine",
         meaning="configured cap on concurrently running requests",
         gap=NO_LIMITS),
    _gap("max_num_batched_tokens", type="gauge", unit="tokens", category="engine",
         meaning="configured cap on tokens per engine step",
         gap=NO_LIMITS),
    _gap("max_model_len", type="gauge", unit="tokens", category="engine",
         meaning="configured context length",
         gap=NO_LIMITS,
         derivation="a lower bound from the last 1-2-5 bucket edge of vllm:request_prompt_tokens "
                    "(inventory.catalog.buckets.infer_max_model_len)"),
    _gap("vllm_version", type="info", unit="none", category="engine",
         meaning="vLLM version and build",
         gap="no version or build-info metric",
         derivation="the name dialect (catalog.dialects.detect_dialect) narrows it to an era"),
    _gap("prompt_len_latency", type="histogram", unit="seconds", category="latency",
         meaning="TTFT or ITL broken down by prompt length",
         gap="latency histograms have no input-length dimension"),
)
# fmt: on
