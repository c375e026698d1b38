"""Fixtures the walk's tests share."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def loopback(settings: Any) -> None:
    """fleetsim's replicas listen on 127.0.0.1, which outbound reads refuse by default."""
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
