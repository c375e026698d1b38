"""Live overview updates: one computation per fleet and interval, pushed to every viewer.

Viewers never trigger queries themselves: the scheduler computes the default
overview of each watched fleet once per interval, stores it in the cache and
sends it to the fleet's channel group. Reconnecting clients (and the polling
fallback) read the cached copy, so Prometheus load does not grow with viewers. The
overview is gzip-compressed once per publish (`fleetscope.lib.gzipped`): sockets get
that as a binary frame and the polling fallback as its body, so the web process never
compresses the same megabytes once per viewer.

Each push says when it was made and after how long without the next one the page
must stop calling itself live (`LiveStamp`). The cache and the channel layer are
Redis in production: when either fails, the watch is not recorded (`watch` says so),
nothing is published, and pages poll instead.
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypedDict, cast

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.utils import timezone

from dashboard.overview import (
    Backend,
    OverviewRequest,
    overview_compute,
    overview_json,
    overview_slice,
)
from dashboard.panels import Group
from dashboard.timerange import DEFAULT_RANGE, parse_range
from fleetscope.lib import gzipped, shared_cache
from fleetscope.lib.redis_settings import REDIS_ERRORS
from inventory.access import ViewScope
from inventory.models import Fleet
from queries import Window

log = logging.getLogger(__name__)

# A fleet counts as watched this long after a viewer last connected or pinged.
WATCH_SECONDS = 120
# A page calls itself live while pushes come at most this many intervals apart.
STALE_AFTER_INTERVALS = 2


class OverviewUpdate(TypedDict):
    type: str  # "overview.update": the consumer's handler name
    payload_gzip: bytes  # the overview's JSON, gzip-compressed


class LiveStamp(TypedDict):
    """What a pushed overview says about itself, under the payload's `live` key."""

    pushed_at: str  # UTC, ISO 8601: "stale since" on the page
    interval_seconds: float
    stale_after_seconds: float  # no push for this long: the page says stale and polls


def group_name(scope: ViewScope) -> str:
    """The channel group of viewers of `scope`: everyone in it may see the same thing."""
    return scope.key


def _watch_key(scope: ViewScope) -> str:
    return f"fleetscope:watch:{scope.key}"


def _latest_key(scope: ViewScope, group: Group | None = None) -> str:
    return f"fleetscope:overview-gzip:{scope.key}" + ("" if group is None else f":{group}")


def _computing_key(scope: ViewScope) -> str:
    return f"fleetscope:computing:{scope.key}"


def watch(scope: ViewScope) -> bool:
    """Mark `scope` as watched; False when the cache could not keep the mark (no pushes
    would follow it)."""
    return shared_cache.put(_watch_key(scope), time.time(), timeout=WATCH_SECONDS)


def latest_overview_gzip(scope: ViewScope, group: Group | None = None) -> bytes | None:
    """The last pushed overview of `scope`, as pushed (gzip-compressed JSON); with `group`,
    that group's page cut from the same overview."""
    return shared_cache.get(_latest_key(scope, group))


def latest_overview(scope: ViewScope, group: Group | None = None) -> str | None:
    """The last pushed overview of `scope` (or its `group` page), as JSON text."""
    data = latest_overview_gzip(scope, group)
    return None if data is None else gzipped.decompress(data)


def default_backend() -> Backend:
    return "prometheus" if settings.PROMETHEUS_URL else "local"


def overview_for_default_view(fleet: Fleet) -> dict[str, Any]:
    span = parse_range(DEFAULT_RANGE, None, now=timezone.now())
    window = Window(span.start, span.end, span.step_seconds)
    return overview_compute(OverviewRequest(fleet, window, default_backend()))


def live_stamp() -> LiveStamp:
    interval = float(settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS)
    return {
        "pushed_at": timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "interval_seconds": interval,
        "stale_after_seconds": interval * STALE_AFTER_INTERVALS,
    }


def overviews_publish() -> int:
    """The periodic job: compute and push each watched fleet's overview; return how many.

    At most one computation per view is in flight, across processes: a view still being
    computed (by an overrunning run, or another worker) is skipped this time. The mark
    lasts as long as a Celery task may run, so a killed worker frees the view by then."""
    layer = get_channel_layer()
    published = 0
    for fleet in Fleet.objects.all():
        # One scope per fleet while every viewer may see all of it.
        scope = ViewScope(fleet)
        if shared_cache.get(_watch_key(scope)) is None:
            continue
        computing = _computing_key(scope)
        if not shared_cache.add(computing, 1, timeout=settings.CELERY_TASK_TIME_LIMIT):
            continue
        try:
            payload = overview_for_default_view(fleet)
            payload["live"] = live_stamp()
            data = gzipped.compress(overview_json(payload))
            timeout = settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS * 4
            # The group tabs poll (they have no socket): each gets its own panels only.
            cached = {_latest_key(scope): data} | {
                _latest_key(scope, group): gzipped.compress(
                    overview_json(overview_slice(payload, group))
                )
                for group in Group
            }
            shared_cache.put_many(cached, timeout=timeout)
            published += _push(layer, scope, data)
        finally:
            shared_cache.delete(computing)
    return published


def _push(layer: BaseChannelLayer | None, scope: ViewScope, data: bytes) -> int:
    if layer is None:
        return 1
    message: OverviewUpdate = {"type": "overview.update", "payload_gzip": data}
    try:
        # A TypedDict is a dict at run time; channels' stubs ask for the plain type.
        async_to_sync(layer.group_send)(group_name(scope), cast(dict[str, Any], message))
    except REDIS_ERRORS as exc:
        # The layer is gone: its viewers' sockets close and they poll meanwhile.
        log.warning("live push to %s failed: %s", scope.key, type(exc).__name__)
        return 0
    return 1
