"""Shared fixtures: a small cast of users, and the real services the suite talks to."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from fleetscope.lib import shared_cache
from inventory import scraping
from inventory.store import caches_clear
from tests.roles import user_with_role

# Redis is real in tests: CI and the project machine run it on loopback.
TEST_REDIS_URL = os.environ.get("FLEETSCOPE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def channel_layer() -> BaseChannelLayer:
    """The channel layer the settings configure (they always configure one)."""
    layer = get_channel_layer()
    assert layer is not None
    return layer


@pytest.fixture(autouse=True, scope="session")
def _static_root_exists() -> None:
    settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    # Live overviews and watch marks live in the cache: no test sees another's.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def owner(db: None) -> User:
    """A fleet's owner: an admin, who may do everything the pages offer."""
    return user_with_role("owner", "admin", password="owner-password-1")


@pytest.fixture
def owner_client(owner: User) -> Client:
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that nothing listens on while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        # Bound but not listening: connections are refused, and no one else gets the port.
        yield sock.getsockname()[1]


@pytest.fixture
def requests_seen() -> Iterator[list[tuple[str, str]]]:
    """Every outbound (method, URL) FleetScope sends while the test runs, as the outbound
    guard sees it: read-only tests assert on it."""
    seen: list[tuple[str, str]] = []
    scraping.REQUEST_OBSERVERS.append(lambda method, url: seen.append((method, url)))
    try:
        yield seen
    finally:
        scraping.REQUEST_OBSERVERS.pop()


@pytest.fixture(autouse=True)
def _shared_cache_breaker_reset() -> Iterator[None]:
    """The shared cache's circuit breaker is process-wide: one test's dead Redis must not
    leave the next test's cache switched off (fleetscope.lib.shared_cache)."""
    shared_cache.reset()
    yield
    shared_cache.reset()


@pytest.fixture(autouse=True)
def _empty_store_caches() -> Iterator[None]:
    """The store caches decompressed frames and span listings per process: no test reads
    frames another test cached, or that its rollback removed (inventory.store)."""
    caches_clear()
    yield
    caches_clear()
