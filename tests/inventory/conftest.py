"""Fixtures of the inventory tests: the store's per-process caches start empty in every
test, and a test can set their bound."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from inventory.store import caches_clear


@pytest.fixture(autouse=True)
def empty_store_caches() -> Iterator[None]:
    # One cache of each per process: no test sees frames another test cached or listed.
    caches_clear()
    yield
    caches_clear()


@pytest.fixture
def cache_mb(settings: Any) -> Iterator[Any]:
    """Sets FLEETSCOPE_FRAME_CACHE_MB for one test: `cache_mb(0.5)`."""

    def set_to(megabytes: float) -> None:
        settings.FLEETSCOPE_FRAME_CACHE_MB = megabytes

    set_to(256.0)
    yield set_to
