"""A fleet's price per GPU-hour as OpenCost measures it, read through Prometheus.

OpenCost (and Kubecost's cost model) export `node_gpu_hourly_cost`, "Hourly cost per GPU
on this node", a gauge labelled with the Kubernetes `node`. The fleet's price is the mean
of that gauge over the period on each node that holds the fleet's GPUs, weighted by how
many of the fleet's GPUs each node holds. A node is tied to the fleet by the `Hostname`
its GPUs' DCGM series carry (`inventory.gpus.fleet_gpus`), compared exactly with
OpenCost's `node` label; other nodes' prices are ignored.

Never a guess: when Prometheus is not configured or cannot answer, when OpenCost's metric
is absent, when no priced node holds the fleet's GPUs, when one of the fleet's nodes (or
GPUs without a host name) has no price, or when a price is not a positive number, there
is no price and `reason` says why. The one query goes through `queries.promql.fetch`, the
read-only GET path every Prometheus request of FleetScope takes.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

from capacity.figures import Quantity
from inventory.gpus import fleet_gpus
from inventory.models import Fleet
from queries import Window
from queries.promql import duration, fetch

METRIC = "node_gpu_hourly_cost"
NODE_LABEL = "node"
PRICE_KEY = "price_per_gpu_hour_usd"
PRICE_UNIT = "usd_per_gpu_hour"
# The range query is asked at one instant, the period's end; its step is never used.
STEP_SECONDS = 60.0
# How many names a reason lists before it says "and N more".
SHOWN_NAMES = 8


@dataclass(frozen=True)
class OpenCostPrice:
    """OpenCost's price per GPU-hour for a fleet (`price`), or why there is none
    (`reason`); `query` is the PromQL asked (or that would be asked)."""

    price: Quantity | None
    reason: str = ""
    query: str = ""


def opencost_query(period_seconds: float) -> str:
    """Each node's mean `node_gpu_hourly_cost` over the period before the query time."""
    return f"avg by ({NODE_LABEL}) (avg_over_time({METRIC}[{duration(period_seconds)}]))"


def opencost_gpu_price(
    fleet: Fleet,
    *,
    start: datetime,
    end: datetime,
    base_url: str | None = None,
    timeout_seconds: float | None = None,
) -> OpenCostPrice:
    """The mean OpenCost price per GPU-hour of `fleet`'s GPUs over [start, end), from the
    Prometheus at `base_url` (default: settings.PROMETHEUS_URL)."""
    if end <= start:
        raise ValueError("the period must end after it starts")
    query = opencost_query((end - start).total_seconds())
    url = base_url or settings.PROMETHEUS_URL
    if not url:
        return OpenCostPrice(None, "Prometheus is not configured", query)
    gpus_by_node, unnamed = _fleet_gpus_by_node(fleet)
    if not gpus_by_node and not unnamed:
        return OpenCostPrice(None, "this fleet's DCGM exporters show no GPUs", query)
    if unnamed:
        total = unnamed + sum(gpus_by_node.values())
        return OpenCostPrice(
            None,
            f"{unnamed} of this fleet's {total} GPUs carry no host name in their DCGM series, "
            "so no node's price can be tied to them",
            query,
        )
    fetched = fetch(
        query,
        Window(end, end, STEP_SECONDS),
        base_url=url,
        timeout_seconds=timeout_seconds or settings.PROMETHEUS_TIMEOUT_SECONDS,
    )
    if fetched.answer is None:
        assert fetched.error is not None
        return OpenCostPrice(
            None, f"Prometheus could not answer ({fetched.error.reason}): {fetched.error}", query
        )
    try:
        prices = _node_prices(fetched.answer.result)
    except ValueError as exc:
        return OpenCostPrice(None, f"Prometheus answered {METRIC} in the wrong shape: {exc}", query)
    if not prices:
        return OpenCostPrice(
            None,
            f"Prometheus has no {METRIC} samples in this period: OpenCost's metrics are not "
            "exported to it (or OpenCost did not run then)",
            query,
        )
    found = _fleet_price(prices, gpus_by_node)
    if isinstance(found, str):
        return OpenCostPrice(None, found, query)
    value, note = found
    if fetched.answer.warnings:
        note += "; " + "; ".join(f"prometheus: {w}" for w in fetched.answer.warnings)
    nodes = len(gpus_by_node)
    source = (
        f"OpenCost {METRIC} via Prometheus, mean over the period over {nodes} "
        f"node{'s' if nodes != 1 else ''} of this fleet"
    )
    return OpenCostPrice(
        Quantity(PRICE_KEY, value, PRICE_UNIT, "measured", source, note), "", query
    )


def _fleet_gpus_by_node(fleet: Fleet) -> tuple[Counter[str], int]:
    """How many of the fleet's GPUs each host holds, and how many GPUs name no host."""
    hosts = Counter(a.gpu.hostname for a in fleet_gpus(fleet).assignments)
    unnamed = hosts.pop("", 0)
    return hosts, unnamed


def _node_prices(rows: list[dict[str, object]]) -> dict[str, float]:
    """Each node's price in an answer's rows (a node's latest point; rows without a `node`
    label or without points are skipped). Raises ValueError on a row's points that are not
    Prometheus' `[time, "value"]` pairs of a number."""
    prices: dict[str, float] = {}
    for row in rows:
        metric = row.get("metric")
        node = metric.get(NODE_LABEL, "") if isinstance(metric, dict) else ""
        points = row.get("values")
        if not node or not isinstance(points, list) or not points:
            continue
        pair = points[-1]
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
            raise ValueError('a point is not [time, "value"]')
        try:
            prices[node] = float(pair[1])
        except ValueError:
            raise ValueError("a value is not a number") from None
    return prices


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_NAMES])
    more = len(names) - SHOWN_NAMES
    return shown + (f" and {more} more" if more > 0 else "")


def _fleet_price(prices: dict[str, float], gpus_by_node: Counter[str]) -> tuple[float, str] | str:
    """The GPU-weighted mean price of the fleet's nodes and a note of its terms, or the
    reason there is none."""
    total = sum(gpus_by_node.values())
    priced = sorted(node for node in gpus_by_node if node in prices)
    if not priced:
        return (
            f"OpenCost prices nodes {_names(sorted(prices))}; none holds this fleet's GPUs "
            f"({_names(sorted(gpus_by_node))})"
        )
    unpriced = sorted(node for node in gpus_by_node if node not in prices)
    if unpriced:
        held = sum(gpus_by_node[node] for node in unpriced)
        return (
            f"OpenCost has no price for nodes {_names(unpriced)}, which hold {held} of this "
            f"fleet's {total} GPUs"
        )
    for node in priced:
        value = prices[node]
        if not math.isfinite(value) or value < 0:
            return f"OpenCost's {METRIC} on node {node} is {value!r}, not a price"
        if value == 0:
            return (
                f"OpenCost's {METRIC} on node {node} is 0: OpenCost has no GPU price there, "
                "and 0 is not a price"
            )
    value = sum(prices[node] * gpus_by_node[node] for node in priced) / total
    note = "; ".join(
        f"{node}: {prices[node]:.6g} USD per GPU-hour x {gpus_by_node[node]} "
        f"GPU{'s' if gpus_by_node[node] != 1 else ''}"
        for node in priced
    )
    return value, note
