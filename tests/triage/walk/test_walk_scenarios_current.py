"""The walk reaches each scenario's manifest branch, and no other leaf, on the current
vLLM dialect: one row per scenario and seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.triage.walk.scenario_walks import (
    TABLE_SCENARIOS,
    assert_walk_reaches_the_manifest_branch,
    history_of,
    walk_history,
)


@pytest.mark.django_db
@pytest.mark.parametrize("seed", (0, 1, 2))
@pytest.mark.parametrize("scenario", TABLE_SCENARIOS)
def test_the_walk_supports_exactly_the_manifest_branch(
    scenario: str, seed: int, tmp_path: Path, settings: Any
) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    assert_walk_reaches_the_manifest_branch(history_of(scenario, seed=seed), tmp_path)


@pytest.mark.django_db
@pytest.mark.parametrize("seed", (0, 1, 2))
def test_a_straggler_hidden_in_fleet_averages_is_found_among_its_peers(
    seed: int, tmp_path: Path, settings: Any
) -> None:
    """Eight replicas, four serving the throttled replica's model: its slowdown barely
    moves the model's average. The walk is scoped to that model, as a breach of its SLO
    would scope it (the other models' ordinary bursts are another walk's business)."""
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of("hidden-straggler", seed=seed, replicas=8)
    (affected,) = history.manifest["affected_replicas"]
    walk = walk_history(history, tmp_path, model_name=affected["model_name"])
    assert walk.supported == ("tpot.straggler.gpu_throttle",), walk.node("tpot").reason
    assert walk.node("tpot.straggler").replicas == (affected["instances"]["vllm"],)
