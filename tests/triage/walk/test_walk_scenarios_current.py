"""The walk reaches each scenario's manifest branch, and no other leaf, on the current
vLLM dialect: one row per scenario and seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.triage.walk.scenario_walks import history_of, walk_history

SCENARIOS = (
    "steady",
    "traffic-burst",
    "long-prompt-surge",
    "kv-pressure",
    "cold-restart",
    "tokenizer-saturation",
    "gpu-throttle",
    "collective-degradation",
    "replica-down",
    "version-skew",
    "lora-thrash",
)


@pytest.mark.django_db
@pytest.mark.parametrize("seed", (0, 1, 2))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_walk_supports_exactly_the_manifest_branch(
    scenario: str, seed: int, tmp_path: Path, settings: Any
) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of(scenario, seed=seed)
    walk = walk_history(history, tmp_path)
    expected = history.manifest["expected_triage_branch"]
    assert walk.supported == (expected,), walk.node(expected).reason
    assert walk.breach.found is (expected != "healthy")
