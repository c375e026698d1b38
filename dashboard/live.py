"""Live overview updates: one computation per fleet and interval, pushed to every viewer.

Viewers never trigger queries themselves: the scheduler computes the default
overview of each watched fleet once per interval, stores it in the cache and
sends it to the fleet's channel group. Reconnecting clients (and the polling
fallback) read the cached copy, so Prometheus load does not grow with viewers.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict, cast

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from dashboard.overview import Backend, OverviewRequest, overview_compute, overview_json
from dashboard.timerange import DEFAULT_RANGE, parse_range
from inventory.access import ViewScope
from inventory.models import Fleet
from queries import Window

# A fleet counts as watched this long after a viewer last connected or pinged.
WATCH_SECONDS = 120


class OverviewUpdate(TypedDict):
    type: str  # "overview.update": the consumer's handler name
    payload_json: str


def group_name(scope: ViewScope) -> str:
    """The channel group of viewers of `scope`: everyone in it may see the same thing."""
    return scope.key


def _watch_key(scope: ViewScope) -> str:
    return f"fleetscope:watch:{scope.key}"


def _latest_key(scope: ViewScope) -> str:
    return f"fleetscope:overview:{scope.key}"


def watch(scope: ViewScope) -> None:
    cache.set(_watch_key(scope), time.time(), timeout=WATCH_SECONDS)


def latest_overview(scope: ViewScope) -> str | None:
    return cache.get(_latest_key(scope))


def default_backend() -> Backend:
    return "prometheus" if settings.PROMETHEUS_URL else "local"


def overview_for_default_view(fleet: Fleet) -> dict[str, Any]:
    span = parse_range(DEFAULT_RANGE, None, now=timezone.now())
    window = Window(span.start, span.end, span.step_seconds)
    return overview_compute(OverviewRequest(fleet, window, default_backend()))


def overviews_publish() -> int:
    """The periodic job: compute and push each watched fleet's overview; return how many."""
    layer = get_channel_layer()
    published = 0
    for fleet in Fleet.objects.all():
        # One scope per fleet while every viewer may see all of it.
        scope = ViewScope(fleet)
        if cache.get(_watch_key(scope)) is None:
            continue
        payload = overview_json(overview_for_default_view(fleet))
        timeout = settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS * 4
        cache.set(_latest_key(scope), payload, timeout=timeout)
        if layer is not None:
            message: OverviewUpdate = {"type": "overview.update", "payload_json": payload}
            # A TypedDict is a dict at run time; channels' stubs ask for the plain type.
            async_to_sync(layer.group_send)(group_name(scope), cast(dict[str, Any], message))
        published += 1
    return published
