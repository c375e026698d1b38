"""The one module that talks to Prometheus. Read-only API paths, mandatory timeouts."""

from __future__ import annotations

import httpx


class PrometheusError(Exception):
    """Prometheus could not answer; the message names the reason, never the response body."""


def prometheus_ping(base_url: str, *, timeout_seconds: float) -> None:
    """Succeed when Prometheus answers its build-info API; raise PrometheusError otherwise."""
    url = f"{base_url}/api/v1/status/buildinfo"
    try:
        response = httpx.get(url, timeout=timeout_seconds, follow_redirects=False)
    except httpx.TimeoutException:
        raise PrometheusError(f"prometheus timed out after {timeout_seconds:g}s") from None
    except httpx.HTTPError as exc:
        raise PrometheusError(f"prometheus unreachable: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise PrometheusError(f"prometheus answered HTTP {response.status_code}")
