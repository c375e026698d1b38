"""The hand-computed fleet the cost tests share: 2 models, 3 tenants, one unattributed row,
engine tokens the gateway did not see, idle capacity and a platform cost.

    llama-8b: 100 GPU-h at $2 = $200, busy 0.6; good fraction exactly 0.9
        acme 600k, beta 400k, "mystery" (no rule) 50k output tokens on the gateway;
        the engines produced 1.1M, so 50k the gateway did not see: 1.1M in all
    qwen-32b: 50 GPU-h at $4 = $200, busy 0.8; good fraction 0.8..0.9
        beta 100k, gamma (by its LoRA adapter) 400k; the engines produced 500k
    platform: $60, split over the fleet's 1.6M output tokens

Allocation basis: acme 1200/11 + 22.5, beta 800/11 + 15 + 40 + 3.75, gamma 160 + 15,
unattributed 2 x (100/11 + 1.875); the bill is 200 + 200 + 60 = 460.
Usage basis: idle is 0.4 x 200 = 80 (llama) + 0.2 x 200 = 40 (qwen).
"""

from __future__ import annotations

from capacity.cost import Attribution, ModelBill, TenantRule, UsageRow, attribute
from capacity.figures import Quantity
from slo.evaluation import Interval

LLAMA = "llama-8b"
QWEN = "qwen-32b"
BILL_USD = 460.0
ACME_COST_USD = 1200 / 11 + 22.5
BETA_COST_USD = 800 / 11 + 15 + 40 + 3.75
GAMMA_COST_USD = 160 + 15.0
UNATTRIBUTED_COST_USD = 2 * (100 / 11 + 1.875)


def price(usd_per_gpu_hour: float | None) -> Quantity:
    return Quantity("price_per_gpu_hour_usd", usd_per_gpu_hour, "usd_per_gpu_hour", "entered")


def platform(usd: float | None = 60.0) -> Quantity:
    return Quantity("platform_cost_usd", usd, "usd", "entered")


def rules() -> list[TenantRule]:
    return [
        TenantRule("acme", "gateway_label", "acme"),
        TenantRule("beta", "gateway_label", "beta"),
        TenantRule("gamma", "lora_adapter", "gamma-lora"),
    ]


def gateway_row(
    model: str, tenant: str, output_tokens: float, ok: float = 100, failed: float = 0, **labels: str
) -> UsageRow:
    return UsageRow(
        model, {"tenant": tenant, **labels}, ok, failed, 2 * output_tokens, output_tokens
    )


def rows() -> list[UsageRow]:
    return [
        gateway_row(LLAMA, "acme", 600_000, ok=1000, failed=10),
        gateway_row(LLAMA, "beta", 400_000, ok=500, failed=5),
        gateway_row(LLAMA, "mystery", 50_000, ok=40),
        gateway_row(QWEN, "beta", 100_000, ok=80, failed=20),
        gateway_row(QWEN, "shared", 400_000, ok=300, adapter="gamma-lora"),
    ]


def bills(
    llama_price: float | None = 2.0,
    qwen_price: float | None = 4.0,
    llama_good: Interval | None = None,
) -> list[ModelBill]:
    return [
        ModelBill(
            LLAMA, 100.0, 0.6, price(llama_price), 1_100_000, llama_good or Interval.exact(0.9)
        ),
        ModelBill(QWEN, 50.0, 0.8, price(qwen_price), 500_000, Interval(0.8, 0.9)),
    ]


def attribution() -> Attribution:
    return attribute(rows(), rules())
