"""Fleets for the SLO tests, recorded by fleetsim and loaded through `history_import`: a
current one that exposes every objective's metric, one on vLLM 0.10 (no per-request TPOT)
and one where only the DCGM exporters are left."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Endpoint, Fleet

# A fixed end on the 15 s grid, so every run records the same five minutes.
END = 1_794_999_990.0
MINUTES = 5


def record(path: Path, *, dialect: str) -> Path:
    History(
        replicas=2, scenario="steady", hours=MINUTES / 60, dialect=dialect, seed=5, end=END
    ).write_openmetrics(path)
    return path


@pytest.fixture(scope="session")
def current_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("slo") / "current.om", dialect="current")


@pytest.fixture(scope="session")
def old_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("slo") / "old.om", dialect="v1-0.10")


@pytest.fixture
def fleet(db: None, current_history: Path) -> Fleet:
    return history_import(fleet_slug="prod", fleet_name="Production", path=current_history).fleet


@pytest.fixture
def old_fleet(db: None, old_history: Path) -> Fleet:
    """Two vLLM 0.10 replicas: ITL under its old name, and no per-request TPOT at all."""
    return history_import(fleet_slug="legacy", path=old_history).fleet


@pytest.fixture
def gpu_only_fleet(db: None, current_history: Path) -> Fleet:
    """A fleet whose engines are switched off in FleetScope: only DCGM exporters are read."""
    fleet = history_import(fleet_slug="gpus", path=current_history).fleet
    Endpoint.objects.filter(fleet=fleet).exclude(kind="dcgm").update(enabled=False)
    return fleet


def engine_instances(fleet: Fleet) -> list[str]:
    return sorted(e.instance for e in Endpoint.objects.filter(fleet=fleet, kind="vllm"))


def form_data(**given: Any) -> dict[str, Any]:
    """What a person types into the SLO form (thresholds in ms, targets in %); a value of
    None leaves its field out."""
    values: dict[str, Any] = {
        "name": "Chat latency",
        "window_days": "28",
        "bad_finish_reasons": ["abort", "error"],
        "ttft_threshold_ms": "200",
        "ttft_target": "99.9",
    }
    return {key: value for key, value in (values | given).items() if value is not None}
