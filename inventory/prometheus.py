"""The one module that talks to Prometheus. Read-only API paths, mandatory timeouts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from inventory.outbound import sync_client


class PrometheusError(Exception):
    """Prometheus could not answer; the message names the reason, never the response body."""


def _get(
    url: str, *, timeout_seconds: float, params: Mapping[str, str] | None = None
) -> httpx.Response:
    try:
        with sync_client(timeout_seconds=timeout_seconds) as client:
            response = client.get(url, params=params)
    except httpx.TimeoutException:
        raise PrometheusError(f"prometheus timed out after {timeout_seconds:g}s") from None
    except httpx.HTTPError as exc:
        raise PrometheusError(f"prometheus unreachable: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise PrometheusError(f"prometheus answered HTTP {response.status_code}")
    return response


def prometheus_ping(base_url: str, *, timeout_seconds: float) -> None:
    """Succeed when Prometheus answers its build-info API; raise PrometheusError otherwise."""
    _get(f"{base_url.rstrip('/')}/api/v1/status/buildinfo", timeout_seconds=timeout_seconds)


def prometheus_active_targets(base_url: str, *, timeout_seconds: float) -> dict[str, Any]:
    """The JSON of /api/v1/targets?state=active (read-only)."""
    response = _get(
        f"{base_url.rstrip('/')}/api/v1/targets",
        timeout_seconds=timeout_seconds,
        params={"state": "active"},
    )
    try:
        body = response.json()
    except ValueError:
        raise PrometheusError("prometheus answered with something that is not JSON") from None
    if not isinstance(body, dict) or body.get("status") != "success":
        raise PrometheusError("prometheus answered status other than success")
    return body
