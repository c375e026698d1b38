"""The cost trend: the period cut into at most MAX_BUCKETS buckets, each bucket's
report, and the stacked-bar plotly figure."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from capacity.cost import UNATTRIBUTED, CostReport
from capacity.models import FleetPrice
from capacity.pages.cost.shown import IDLE
from capacity.pages.cost.tables import has_usage
from capacity.pages.params import FUTURE_TOLERANCE, Backend, backend_parse, utc_text
from capacity.services import CostReview, cost_review
from dashboard.figures import plotly_text, utc_times
from fleetscope.lib import shared_cache
from inventory.models import Fleet

MAX_BUCKETS = 48
# Trend bucket sizes, smallest first: the first that fits the period in MAX_BUCKETS.
BUCKET_SIZES = (
    timedelta(minutes=5),
    timedelta(minutes=15),
    timedelta(hours=1),
    timedelta(days=1),
)
TREND_CACHE_SECONDS = 3600


def bucket_size(start: datetime, end: datetime) -> timedelta:
    """The smallest of 5 min, 15 min, an hour, a day, or n days that cuts the period into at
    most MAX_BUCKETS buckets."""
    span = end - start
    for size in BUCKET_SIZES:
        if span / size <= MAX_BUCKETS:
            return size
    return timedelta(days=math.ceil(span / timedelta(days=1) / MAX_BUCKETS))


def bucket_text(size: timedelta) -> str:
    """A bucket size in words: "5 minutes", "hour", "day", "2 days"."""
    minutes = int(size.total_seconds() // 60)
    if minutes % 1440 == 0:
        days = minutes // 1440
        return "day" if days == 1 else f"{days} days"
    if minutes % 60 == 0:
        hours = minutes // 60
        return "hour" if hours == 1 else f"{hours} hours"
    return f"{minutes} minutes"


def buckets(start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
    """[start, end) cut on the UTC grid of the bucket size; the first and last may be part
    buckets."""
    size = bucket_size(start, end)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    edge = epoch + ((start - epoch) // size) * size
    found = []
    while edge < end:
        found.append((max(edge, start), min(edge + size, end)))
        edge += size
    return found


@dataclass(frozen=True)
class Bucket:
    start: datetime
    end: datetime
    has_usage: bool
    gpu_hours: float
    parts: dict[str, float | None] = field(default_factory=dict)  # tenant/unattributed/idle


def _fingerprint(fleet: Fleet) -> str:
    """What a bucket's cost depends on besides usage: the price and the tenant rules."""
    price = FleetPrice.objects.filter(fleet=fleet).values_list(
        "price_per_gpu_hour_usd", "platform_cost_usd_per_month", "gpus_per_replica"
    )
    rules = fleet.tenant_rules.values_list("tenant", "kind", "label", "pattern", "order")
    text = repr((list(price), list(rules)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _bucket(fleet: Fleet, start: datetime, end: datetime, backend: Backend, basis: str) -> Bucket:
    review = cost_review(fleet, start=start, end=end, backend=backend, goodput=False)
    report = review.report
    parts: dict[str, float | None] = {}
    recon = report.usage_reconciliation if basis == "usage" else report.reconciliation
    for total in report.tenants:
        parts[total.tenant] = total.usage_cost_usd if basis == "usage" else total.cost_usd
    parts[IDLE] = None if recon is None else recon.idle_usd
    return Bucket(start, end, has_usage(review), report.gpu_hours, parts)


def trend(
    review: CostReview, *, now: datetime | None = None, tenant: str | None = None
) -> list[Bucket]:
    """The period's cost per bucket.

    Each bucket is its own `cost_review` without the SLO evaluation (a bar shows the
    split of cost, not cost per good token), so its split is exactly what a report of
    that bucket would say. A cheaper way would be one range
    query per counter with the bucket as step (`increase()` per step, GPU presence per
    step) instead of one instant query per bucket; that needs a per-step variant of
    `capacity.usage.period_usage`. Until then, buckets that ended are cached (keyed by the
    price and the tenant rules, so a change to either is seen at once): a reload costs
    only the bucket still open.
    """
    now = now or datetime.now(UTC)
    basis = "usage" if review.report.usage_reconciliation is not None else "allocation"
    fleet = review.fleet
    fingerprint = _fingerprint(fleet)
    found = []
    for start, end in buckets(review.start, review.end):
        key = (
            f"capacity.cost.trend.{fleet.code.hex}.{review.backend}.{basis}.{fingerprint}."
            f"{int(start.timestamp())}.{int(end.timestamp())}"
        )
        # The cache is an optimisation: with Redis down every bucket is computed.
        bucket = shared_cache.get(key)
        if not isinstance(bucket, Bucket):
            bucket = _bucket(fleet, start, end, backend_parse(review.backend), basis)
            if end <= now - FUTURE_TOLERANCE:
                shared_cache.put(key, bucket, timeout=TREND_CACHE_SECONDS)
        if tenant is not None:  # one tenant's view: its own bar only, no idle
            bucket = replace(bucket, parts={tenant: bucket.parts.get(tenant)})
        found.append(bucket)
    return found


TREND_COLOURS = ("#1f6feb", "#2e7d32", "#8e44ad", "#d35400", "#00838f", "#c2185b", "#6d4c41")
UNATTRIBUTED_COLOUR = "#9e9e9e"
IDLE_COLOUR = "#cfd8dc"


def trend_figure(points: Sequence[Bucket], *, priced: bool, basis: str) -> dict[str, Any]:
    """Stacked bars per bucket: each tenant's cost, unattributed and idle (USD), or the
    GPU-hours when no price is set. Times are UTC text (`dashboard.figures.utc_times`)."""
    drawn = [b for b in points if b.has_usage]
    daily = any(b.end - b.start >= timedelta(days=1) for b in points)
    tick_format = "%d %b" if daily else "%d %b %H:%M"
    layout: dict[str, Any] = {
        "barmode": "stack",
        "height": 280,
        "margin": {"l": 60, "r": 10, "t": 10, "b": 40},
        "xaxis": {
            "type": "date",
            "title": {"text": "time (UTC)"},
            "tickformat": tick_format,
            "hoverformat": "%Y-%m-%d %H:%M",
        },
        "yaxis": {"title": {"text": "USD per bucket" if priced else "GPU-hours per bucket"},
                  "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.3},
    }  # fmt: skip
    if not drawn:
        return {"data": [], "layout": layout}
    # The whole period on the axis: buckets without usage are gaps, not squeezed out.
    layout["xaxis"]["range"] = utc_times([points[0].start.timestamp(),
                                          points[-1].end.timestamp()])  # fmt: skip
    middles = utc_times([(b.start.timestamp() + b.end.timestamp()) / 2 for b in drawn])
    widths = [(b.end - b.start).total_seconds() * 1000 * 0.9 for b in drawn]
    starts = [utc_text(b.start) for b in drawn]
    if not priced:
        trace = {
            "type": "bar", "name": "GPU-hours", "x": middles, "width": widths,
            "y": [b.gpu_hours for b in drawn], "customdata": starts,
            "marker": {"color": TREND_COLOURS[0]},
            "hovertemplate": "from %{customdata}<br>%{y:.3f} GPU-hours<extra></extra>",
        }  # fmt: skip
        return {"data": [trace], "layout": layout}
    names = sorted({n for b in drawn for n in b.parts} - {UNATTRIBUTED, IDLE})
    names += [UNATTRIBUTED, IDLE]
    data = []
    for index, name in enumerate(names):
        values = [b.parts.get(name) for b in drawn]
        if all(v is None or v == 0 for v in values):
            continue
        colour = {UNATTRIBUTED: UNATTRIBUTED_COLOUR, IDLE: IDLE_COLOUR}.get(
            name, TREND_COLOURS[index % len(TREND_COLOURS)]
        )
        data.append(
            {
                "type": "bar", "name": plotly_text(name), "x": middles, "width": widths,
                "y": values, "customdata": starts, "marker": {"color": colour},
                "hovertemplate": f"{plotly_text(name)}: %{{y:.4~f}} USD ({basis} basis)"
                "<br>from %{customdata}<extra></extra>",
            }
        )  # fmt: skip
    return {"data": data, "layout": layout}


def trend_basis(report: CostReport) -> str:
    return "usage" if report.usage_reconciliation is not None else "allocation"
