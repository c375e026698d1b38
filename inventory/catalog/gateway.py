"""Catalog data: FleetScope's gateway convention (fleetsim/README.md, "FleetScope's gateway
convention"). vLLM has no tenant dimension (reference section 11), so per-tenant usage
and cost read the gateway in front of the engines; these names are the convention a
gateway exports for FleetScope, labelled by `tenant` and the served `model_name`.
"""

from __future__ import annotations

from inventory.catalog.model import CatalogEntry, Category, MetricType, Unit, entry

TENANT_LABELS: tuple[str, ...] = ("tenant", "model_name")


def _gateway(
    key: str,
    name: str,
    *,
    type: MetricType,
    unit: Unit,
    meaning: str,
    category: Category = "traffic",
    extra: tuple[str, ...] = (),
) -> CatalogEntry:
    return entry(
        key,
        name,
        source_kind="gateway",
        type=type,
        unit=unit,
        category=category,
        meaning=meaning,
        labels=TENANT_LABELS + extra,
    )


# fmt: off
ENTRIES: tuple[CatalogEntry, ...] = (
    _gateway("gateway_requests", "fleetscope_gateway_requests_total", type="counter",
             unit="requests", extra=("status",),
             meaning="requests answered by the gateway, by HTTP status class (2xx, 4xx, 5xx)"),
    _gateway("gateway_retries", "fleetscope_gateway_retries_total", type="counter",
             unit="requests",
             meaning="attempts repeating an earlier one: client retries and the gateway's "
                     "own upstream retries"),
    _gateway("gateway_prompt_tokens", "fleetscope_gateway_prompt_tokens_total",
             type="counter", unit="tokens", meaning="prompt tokens of served requests"),
    _gateway("gateway_generation_tokens", "fleetscope_gateway_generation_tokens_total",
             type="counter", unit="tokens", meaning="generated tokens of served requests"),
    _gateway("gateway_cached_prompt_tokens", "fleetscope_gateway_cached_prompt_tokens_total",
             type="counter", unit="tokens",
             meaning="prompt tokens served from the prefix cache"),
    _gateway("gateway_request_duration", "fleetscope_gateway_request_duration_seconds",
             type="histogram", unit="seconds", category="latency",
             meaning="gateway-measured request latency, arrival to last byte"),
    _gateway("gateway_ttft", "fleetscope_gateway_time_to_first_token_seconds",
             type="histogram", unit="seconds", category="latency",
             meaning="gateway-measured time to first token"),
    _gateway("gateway_tpot", "fleetscope_gateway_time_per_output_token_seconds",
             type="histogram", unit="seconds", category="latency",
             meaning="per request: decode time divided by (generated tokens - 1)"),
    _gateway("gateway_lora_adapter_info", "fleetscope_gateway_lora_adapter_info",
             type="info", unit="items", extra=("adapter",),
             meaning="which tenant owns each LoRA adapter the gateway routed"),
)
# fmt: on
