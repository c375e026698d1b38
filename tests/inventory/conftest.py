"""Fixtures of the inventory tests: a test can set the bound of the store's frame cache
(which the root conftest empties around every test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def cache_mb(settings: Any) -> Iterator[Any]:
    """Sets FLEETSCOPE_FRAME_CACHE_MB for one test: `cache_mb(0.5)`."""

    def set_to(megabytes: float) -> None:
        settings.FLEETSCOPE_FRAME_CACHE_MB = megabytes

    set_to(256.0)
    yield set_to
