"""A straggler hidden in fleet averages: eight replicas, four serving the throttled
replica's model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.triage.walk.scenario_walks import history_of, walk_history


@pytest.mark.django_db
@pytest.mark.parametrize("seed", (0, 1, 2))
def test_a_straggler_hidden_in_fleet_averages_is_found_among_its_peers(
    seed: int, tmp_path: Path, settings: Any
) -> None:
    """Its slowdown barely moves the model's average. The walk is scoped to that model,
    as a breach of its SLO would scope it (the other models' ordinary bursts are another
    walk's business)."""
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of("hidden-straggler", seed=seed, replicas=8)
    (affected,) = history.manifest["affected_replicas"]
    walk = walk_history(history, tmp_path, model_name=affected["model_name"])
    assert walk.supported == ("tpot.straggler.gpu_throttle",), walk.node("tpot").reason
    assert walk.node("tpot.straggler").replicas == (affected["instances"]["vllm"],)
