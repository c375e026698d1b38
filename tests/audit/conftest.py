"""A small recorded fleet for the audit tests: one replica's five steady minutes, loaded
through `history_import`, so an SLO on it passes the admin's "is it exposed" check."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet

END = 1_794_999_990.0  # a fixed end: every run records the same minutes


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("audit") / "fleet.om"
    History(replicas=1, scenario="steady", hours=5 / 60, seed=5, end=END).write_openmetrics(path)
    return path


@pytest.fixture
def fleet(db: None, recorded: Path) -> Fleet:
    return history_import(fleet_slug="prod", fleet_name="Production", path=recorded).fleet
