"""Waiting on conditions (never on a fixed delay) for tests that drive real processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import httpx

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None], *, timeout: float = 30.0, what: str = "condition"
) -> T:
    """Call `probe` until it returns something other than None, or fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)  # polling interval of a condition wait, not a fixed delay


def get_when_listening(url: str, *, timeout: float = 30.0) -> httpx.Response:
    def probe() -> httpx.Response | None:
        try:
            return httpx.get(url, timeout=15)
        except httpx.ConnectError:
            return None

    return wait_until(probe, timeout=timeout, what=f"a server at {url}")
