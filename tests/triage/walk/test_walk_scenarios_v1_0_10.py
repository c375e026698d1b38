"""The walk reaches each scenario's manifest branch, and no other leaf, on vLLM 0.10
(`v1-0.10`: old TPOT name, both KV-usage names, no waiting-by-reason): one row per
scenario and seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.triage.walk.scenario_walks import (
    TABLE_SCENARIOS,
    assert_walk_reaches_the_manifest_branch,
    history_of,
)


@pytest.mark.django_db
@pytest.mark.parametrize("seed", (0, 1, 2))
@pytest.mark.parametrize("scenario", TABLE_SCENARIOS)
def test_the_walk_supports_exactly_the_manifest_branch(
    scenario: str, seed: int, tmp_path: Path, settings: Any
) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of(scenario, seed=seed, dialect="v1-0.10")
    assert_walk_reaches_the_manifest_branch(history, tmp_path)
