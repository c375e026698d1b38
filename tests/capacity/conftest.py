"""A simulated fleet for the capacity and cost tests: fleetsim's three replicas (two of
llama-3.1-8b on one H100 each, one llama-3.1-70b on four H100s, KV in fp8), its DCGM
exporters and its gateway with per-tenant counters, recorded for 20 minutes that end
now and loaded through `history_import`; with the chat SLO, a capacity plan per model,
a price and tenant rules, as a reviewer would enter them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from capacity.figures import GIB
from capacity.models import CapacityPlan, FleetPrice, GpuProfile, ModelProfile, TenantRule
from capacity.profiles import GPU_PROFILES
from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet
from slo.services import slo_from_preset

MINUTES = 20
STEP_SECONDS = 15.0
PRICE_PER_GPU_HOUR_USD = 4.0
PLATFORM_USD_PER_MONTH = 7305.0  # 10 USD per hour of an average month
PROFILE_NAMES = ("Llama-3.1-8B-Instruct", "Llama-3.1-70B-Instruct")

LLAMA_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
LLAMA_70B_CONFIG = {
    **LLAMA_8B_CONFIG,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
}


@dataclass(frozen=True)
class SimTruth:
    """What the simulator knows, to compare FleetScope's readings with."""

    path: Path
    start: float
    end: float
    # (tenant, model) -> generated tokens the gateway counted for served requests
    tenant_output_tokens: dict[tuple[str, str], int]
    kv_tokens: dict[str, int]  # model -> KV tokens one replica allocated (cache config)
    gpus: dict[str, int]  # model -> GPUs behind all its replicas


def record(path: Path, *, scenario: str, minutes: float, seed: int) -> SimTruth:
    end = (time.time() // STEP_SECONDS) * STEP_SECONDS
    history = History(replicas=3, scenario=scenario, hours=minutes / 60, dialect="current",
                      seed=seed, end=end)  # fmt: skip
    history.write_openmetrics(path)
    replicas = history.model.replicas
    gpus: dict[str, int] = {}
    for replica in replicas:
        name = replica.cfg.model.served_name
        gpus[name] = gpus.get(name, 0) + len(replica.cfg.gpus)
    return SimTruth(
        path,
        history.start,
        history.end,
        {key: stats.generation for key, stats in history.model.gateway.tenants.items()},
        {r.cfg.model.served_name: r.cfg.kv_tokens for r in replicas},
        gpus,
    )


@pytest.fixture(scope="session")
def sim_truth(tmp_path_factory: pytest.TempPathFactory) -> SimTruth:
    """Ends on the step grid a few seconds ago, so pages that read "the last 7 days
    until now" see all of it for the rest of the session."""
    path = tmp_path_factory.mktemp("capacity") / "fleet.om"
    return record(path, scenario="steady", minutes=MINUTES, seed=7)


@pytest.fixture(scope="session")
def sim_history(sim_truth: SimTruth) -> Path:
    return sim_truth.path


def _profile(name: str, config: dict[str, object], params: int) -> ModelProfile:
    return ModelProfile.objects.create(
        name=name, architecture="LlamaForCausalLM", params=params, dtype="bf16",
        layers=int(str(config["num_hidden_layers"])),
        attention_heads=int(str(config["num_attention_heads"])),
        kv_heads=8, head_dim=128, origin=ModelProfile.Origin.CONFIG, config=config,
    )  # fmt: skip


def _example_h100() -> tuple[GpuProfile, bool]:
    """Seeded by a migration; a transactional test may have flushed it since."""
    example = GPU_PROFILES["H100-80GB"]
    return GpuProfile.objects.get_or_create(
        name=example.name,
        defaults={"usable_memory_bytes": round(example.usable_memory_gib * GIB),
                  "price_per_hour_usd": example.price_usd_per_hour, "example": True},
    )  # fmt: skip


def _sim_fleet_build(sim_history: Path, h100: GpuProfile) -> Fleet:
    fleet = history_import(fleet_slug="sim", fleet_name="Simulated", path=sim_history).fleet
    slo_from_preset(fleet, "chat")
    small = _profile(PROFILE_NAMES[0], LLAMA_8B_CONFIG, 8_030_261_248)
    large = _profile(PROFILE_NAMES[1], LLAMA_70B_CONFIG, 70_553_706_496)
    CapacityPlan.objects.create(
        fleet=fleet, model_name="llama-3.1-8b-instruct", model_profile=small, gpu_profile=h100,
        rho_target=0.7, failure_reserve=1, mu_good_requests_per_second=4.0,
    )  # fmt: skip
    CapacityPlan.objects.create(
        fleet=fleet, model_name="llama-3.1-70b-instruct", model_profile=large, gpu_profile=h100,
        tp=4, kv_dtype="fp8", rho_target=0.7, failure_reserve=1,
        mu_good_requests_per_second=1.0,
    )  # fmt: skip
    FleetPrice.objects.create(
        fleet=fleet,
        price_per_gpu_hour_usd=PRICE_PER_GPU_HOUR_USD,
        platform_cost_usd_per_month=PLATFORM_USD_PER_MONTH,
    )
    for order, tenant in enumerate(("acme", "globex", "hooli", "initech")):
        TenantRule.objects.create(fleet=fleet, tenant=tenant, kind="gateway_label",
                                  pattern=tenant, order=order)  # fmt: skip
    return fleet


@pytest.fixture(scope="module")
def _sim_fleet_shared(
    django_db_setup: None, django_db_blocker: Any, sim_history: Path
) -> Iterator[int]:
    """The fleet is built once per module, outside the tests' transactions: each test's
    changes (a price deleted, exporters disabled) roll back with it, and importing the
    history once instead of per test keeps the capacity tests a few seconds each."""
    with django_db_blocker.unblock():
        h100, made = _example_h100()
        fleet = _sim_fleet_build(sim_history, h100)
    yield fleet.pk
    with django_db_blocker.unblock():
        Fleet.objects.filter(pk=fleet.pk).delete()
        ModelProfile.objects.filter(name__in=PROFILE_NAMES).delete()
        if made:  # leave the database as found: a later seed restore would meet its name
            GpuProfile.objects.filter(pk=h100.pk).delete()


@pytest.fixture
def sim_fleet(db: None, _sim_fleet_shared: int) -> Fleet:
    return Fleet.objects.get(pk=_sim_fleet_shared)


@pytest.fixture
def own_sim_fleet(db: None, sim_history: Path) -> Fleet:
    """The fleet built inside the test: for transactional (browser) tests, which flush the
    database when they end and may restore the seeded rows when they start."""
    return _sim_fleet_build(sim_history, _example_h100()[0])
