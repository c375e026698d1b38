"""Fleets and sources for the audit, page and command tests: fleetsim histories loaded
through `history_import` (a steady fleet on the current vLLM dialect, and one whose first
replica is rolled back to the older dialect part-way and stays there), and the fixture
files of this folder whose names start with `c_`."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DASHBOARD = FIXTURES / "c_audit_dashboard.json"
RULES = FIXTURES / "c_audit_rules.yml"
SCALEDOBJECT = FIXTURES / "c_audit_scaledobject.yaml"
# A fixed end on the 15 s grid, so every run records the same minutes.
END = 1_794_999_990.0
MINUTES = 10.0
# The skewed fleet's first replica is rolled back this many seconds after its start, and
# stays rolled back until the end.
SKEW_AT = 240.0
START = datetime.fromtimestamp(END - MINUTES * 60, UTC)
REPLICAS = ("127.0.0.1:18000", "127.0.0.1:18001", "127.0.0.1:18002")

_files: dict[str, Path] = {}


def history_file(factory: pytest.TempPathFactory, name: str, **options: Any) -> Path:
    """The history `name`, simulated once per session."""
    if name not in _files:
        path = factory.mktemp(f"blindspots-{name}") / f"{name}.om"
        History(hours=MINUTES / 60, seed=5, end=END, **options).write_openmetrics(path)
        _files[name] = path
    return _files[name]


def steady_fleet(factory: pytest.TempPathFactory, slug: str = "steady") -> Fleet:
    """Two replicas on the current dialect, steady traffic."""
    path = history_file(factory, "steady", replicas=2, scenario="steady")
    return history_import(fleet_slug=slug, path=path).fleet


def skewed_fleet(factory: pytest.TempPathFactory, slug: str = "skewed") -> Fleet:
    """Three replicas; the first is rolled back to the older dialect SKEW_AT seconds in."""
    path = history_file(
        factory, "skewed", replicas=3, scenario="version-skew", at=SKEW_AT, duration=7200.0
    )
    return history_import(fleet_slug=slug, path=path).fleet
