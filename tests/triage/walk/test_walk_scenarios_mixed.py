"""The walk reaches each scenario's manifest branch, and no other leaf, in a fleet caught
mid-upgrade: the incident's replica 0 speaks vLLM 0.10, its peer replica 2 early V1 (0.8:
no engine label, old buckets, no waiting-by-reason), replica 1 the current dialect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.triage.walk.scenario_walks import (
    TABLE_SCENARIOS,
    assert_walk_reaches_the_manifest_branch,
    history_of,
)

MIXED = {0: "v1-0.10", 2: "v1-0.8"}


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", TABLE_SCENARIOS)
def test_the_walk_supports_exactly_the_manifest_branch(
    scenario: str, tmp_path: Path, settings: Any
) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of(scenario, seed=3, dialect_of=MIXED)
    assert_walk_reaches_the_manifest_branch(history, tmp_path)
