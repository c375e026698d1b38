"""What a reviewer would enter for the demo fleet, so its SLO, capacity and cost pages
have something to review: the chat SLO, a model profile and capacity plan per served
model (the shapes the simulator runs, on the seeded example H100 profile), and one
tenant rule per tenant its gateway labels. No price: the cost page shows usage and
says "no price set" until someone enters one (README, "Capacity and cost").
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress

from capacity.figures import GIB
from capacity.models import CapacityPlan, GpuProfile, ModelProfile, TenantRule
from capacity.profiles import GPU_PROFILES
from fleetsim.config import ReplicaConfig
from fleetsim.workloads import DEMANDS
from inventory.models import Fleet
from slo.services import SloDefinitionError, slo_from_preset

DEMO_GPU = "H100-80GB"  # the simulator's GPU, as a seeded example profile
DEMO_RHO_TARGET = 0.7


def demo_reviews_seed(fleet: Fleet, configs: Sequence[ReplicaConfig]) -> None:
    """`configs`: the simulated replicas. Rows that exist already are left as they are.
    The SLO needs the fleet's inventory (it is checked against what the fleet exposes),
    so without history it waits for a later start."""
    if not fleet.slos.exists():
        with suppress(SloDefinitionError):
            slo_from_preset(fleet, "chat")
    example = GPU_PROFILES[DEMO_GPU]
    gpu, _ = GpuProfile.objects.get_or_create(
        name=example.name,
        defaults={"usable_memory_bytes": round(example.usable_memory_gib * GIB),
                  "price_per_hour_usd": example.price_usd_per_hour, "example": True},
    )  # fmt: skip
    for cfg in configs:
        spec = cfg.model
        profile, _ = ModelProfile.objects.get_or_create(
            name=spec.path,
            defaults={
                "architecture": "LlamaForCausalLM" if "llama" in spec.path.lower() else "",
                "params": round(spec.params), "dtype": "bf16", "layers": spec.layers,
                "attention_heads": spec.hidden // spec.head_dim, "kv_heads": spec.kv_heads,
                "head_dim": spec.head_dim,
            },
        )  # fmt: skip
        CapacityPlan.objects.get_or_create(
            fleet=fleet,
            model_name=spec.served_name,
            defaults={"model_profile": profile, "gpu_profile": gpu, "tp": cfg.tp,
                      "kv_dtype": cfg.deployment.kv_dtype, "rho_target": DEMO_RHO_TARGET,
                      "failure_reserve": 1},
        )  # fmt: skip
    tenants = sorted({d.tenant for d in DEMANDS})
    for order, tenant in enumerate(tenants):
        TenantRule.objects.get_or_create(
            fleet=fleet, tenant=tenant, kind="gateway_label",
            defaults={"label": "tenant", "pattern": tenant, "order": order},
        )  # fmt: skip
