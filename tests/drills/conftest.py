"""Fault drills: real components stopped and started again mid-test (issue 18, item 7)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Registered here (not in pyproject.toml) so the marker lives with the drills.
    config.addinivalue_line(
        "markers",
        "drill: stops and restarts real components (Prometheus, Redis, PostgreSQL, Celery) "
        "that the test started itself",
    )
