"""A fleet's GPU price from OpenCost's `node_gpu_hourly_cost`, read through a real
Prometheus (Debian's package) fed by remote write: the mean over the period of the nodes
that hold the fleet's GPUs, weighted by how many each holds; every other case is no price
and the reason, never 0 and never a guess.

The Prometheus holds, in five-minute periods of the last hour, what OpenCost would have
exported: the fleets' nodes priced beside a node of no fleet, then only nodes of no fleet,
then a fleet node at -1, at NaN and at 0. Hours before that it holds nothing."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import override_settings

from capacity.opencost import opencost_gpu_price
from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import TimeSeries, remote_write
from fleetsim.history import History
from inventory.gpus import fleet_gpus
from inventory.history import history_import
from inventory.models import Fleet

pytestmark = pytest.mark.prometheus

H100_NODE = "gpu-h100-node-00"  # fleetsim's first H100 node: every GPU of `sim_fleet`
L40S_NODE = "gpu-l40s-node-00"  # the fourth replica's node in `two_node_fleet`
FOREIGN_NODES = ("cpu-pool-7", "other-gpu-node-01")  # nodes of no fleet here
SOURCE = "OpenCost node_gpu_hourly_cost via Prometheus, mean over the period over"

NOW = (time.time() // 60) * 60
MINUTE = 60.0


def minutes_ago(minutes: float) -> float:
    return NOW - minutes * MINUTE


def at(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


@dataclass(frozen=True)
class Period:
    start: float
    end: float

    @property
    def since(self) -> datetime:
        return at(self.start)

    @property
    def until(self) -> datetime:
        return at(self.end)

    def times(self) -> list[float]:
        """One sample a minute in (start, end], as avg_over_time at `end` reads them."""
        count = round((self.end - self.start) / MINUTE)
        return [self.start + (k + 1) * MINUTE for k in range(count)]


PRICED = Period(minutes_ago(55), minutes_ago(45))
FOREIGN_ONLY = Period(minutes_ago(40), minutes_ago(35))
NEGATIVE = Period(minutes_ago(30), minutes_ago(25))
NAN = Period(minutes_ago(20), minutes_ago(15))
ZERO = Period(minutes_ago(10), minutes_ago(5))
EMPTY = Period(minutes_ago(300), minutes_ago(240))

# In PRICED the H100 node costs 2 USD per GPU-hour for five minutes, then 4: 3 on average.
H100_MEAN = 3.0
L40S_PRICE = 1.0
FOREIGN_PRICE = 50.0


def samples(node: str) -> list[tuple[float, int]]:
    """What OpenCost exported for `node`, in time order."""
    values: list[tuple[float, float]] = []
    for k, t in enumerate(PRICED.times()):
        if node == H100_NODE:
            values.append((2.0 if k < len(PRICED.times()) // 2 else 4.0, t))
        elif node == L40S_NODE:
            values.append((L40S_PRICE, t))
        else:
            values.append((FOREIGN_PRICE, t))
    if node in FOREIGN_NODES:
        values.extend((FOREIGN_PRICE, t) for t in FOREIGN_ONLY.times())
    if node == H100_NODE:
        values.extend((-1.0, t) for t in NEGATIVE.times())
        values.extend((math.nan, t) for t in NAN.times())
        values.extend((0.0, t) for t in ZERO.times())
    return [(value, round(t * 1000)) for value, t in values]


def opencost_series(node: str) -> TimeSeries:
    labels = {
        "__name__": "node_gpu_hourly_cost",
        "instance": "opencost.opencost:9003",
        "job": "opencost",
        "node": node,
        "instance_type": "p5.48xlarge" if "h100" in node else "other",
    }
    return TimeSeries(tuple(sorted(labels.items())), tuple(samples(node)))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus holding OpenCost's node prices of the last hour."""
    with running_remote_write_prometheus(tmp_path_factory.mktemp("opencost")) as url:
        remote_write(url, [opencost_series(n) for n in (H100_NODE, L40S_NODE, *FOREIGN_NODES)])
        yield url


@pytest.fixture
def two_node_fleet(db: None, tmp_path: Path) -> Fleet:
    """fleetsim's four replicas: three on the H100 node, the fourth on an L40S node."""
    path = tmp_path / "two-nodes.om"
    History(replicas=4, scenario="steady", hours=0.02, dialect="current", seed=7).write_openmetrics(
        path
    )
    return history_import(fleet_slug="two-nodes", path=path).fleet


def gpus_by_host(fleet: Fleet) -> Counter[str]:
    return Counter(a.gpu.hostname for a in fleet_gpus(fleet).assignments)


def test_the_price_is_the_mean_over_the_period_of_the_node_holding_the_fleets_gpus(
    prometheus: str, sim_fleet: Fleet
) -> None:
    assert gpus_by_host(sim_fleet) == {H100_NODE: 6}  # the fixture's layout, as assumed

    found = opencost_gpu_price(sim_fleet, start=PRICED.since, end=PRICED.until, base_url=prometheus)

    assert found.reason == ""
    assert found.price is not None
    assert found.price.value == pytest.approx(H100_MEAN)  # not the foreign node's 50
    assert found.price.key == "price_per_gpu_hour_usd"
    assert found.price.unit == "usd_per_gpu_hour"
    assert found.price.origin == "measured"
    assert found.price.source == f"{SOURCE} 1 node of this fleet"
    assert found.price.note == f"{H100_NODE}: 3 USD per GPU-hour x 6 GPUs"
    assert found.query == "avg by (node) (avg_over_time(node_gpu_hourly_cost[600s]))"


def test_each_nodes_price_counts_as_many_times_as_it_holds_the_fleets_gpus(
    prometheus: str, two_node_fleet: Fleet
) -> None:
    assert gpus_by_host(two_node_fleet) == {H100_NODE: 6, L40S_NODE: 1}

    found = opencost_gpu_price(
        two_node_fleet, start=PRICED.since, end=PRICED.until, base_url=prometheus
    )

    assert found.price is not None, found.reason
    assert found.price.value == pytest.approx((H100_MEAN * 6 + L40S_PRICE * 1) / 7)
    assert found.price.source == f"{SOURCE} 2 nodes of this fleet"
    assert L40S_NODE in found.price.note and "x 1 GPU" in found.price.note


def test_the_configured_prometheus_is_asked_when_no_url_is_given(
    prometheus: str, sim_fleet: Fleet
) -> None:
    with override_settings(PROMETHEUS_URL=prometheus):
        found = opencost_gpu_price(sim_fleet, start=PRICED.since, end=PRICED.until)

    assert found.price is not None and found.price.value == pytest.approx(H100_MEAN)


def test_no_price_when_opencost_prices_only_nodes_of_no_fleet(
    prometheus: str, sim_fleet: Fleet
) -> None:
    found = opencost_gpu_price(
        sim_fleet, start=FOREIGN_ONLY.since, end=FOREIGN_ONLY.until, base_url=prometheus
    )

    assert found.price is None
    assert found.reason == (
        "OpenCost prices nodes cpu-pool-7, other-gpu-node-01; "
        f"none holds this fleet's GPUs ({H100_NODE})"
    )


def test_no_price_when_one_of_the_fleets_nodes_has_none(
    prometheus: str, two_node_fleet: Fleet
) -> None:
    # In the NEGATIVE period OpenCost prices the H100 node (badly) but not the L40S one.
    found = opencost_gpu_price(
        two_node_fleet, start=NEGATIVE.since, end=NEGATIVE.until, base_url=prometheus
    )

    assert found.price is None
    assert found.reason == (
        f"OpenCost has no price for nodes {L40S_NODE}, which hold 1 of this fleet's 7 GPUs"
    )


@pytest.mark.parametrize(
    ("period", "shown"),
    [(NEGATIVE, "is -1.0, not a price"), (NAN, "is nan, not a price"), (ZERO, "is 0:")],
    ids=["negative", "nan", "zero"],
)
def test_a_price_that_is_negative_nan_or_zero_is_no_price(
    prometheus: str, sim_fleet: Fleet, period: Period, shown: str
) -> None:
    found = opencost_gpu_price(sim_fleet, start=period.since, end=period.until, base_url=prometheus)

    assert found.price is None
    assert found.reason.startswith(f"OpenCost's node_gpu_hourly_cost on node {H100_NODE} ")
    assert shown in found.reason


def test_no_price_when_prometheus_has_no_opencost_metric_in_the_period(
    prometheus: str, sim_fleet: Fleet
) -> None:
    found = opencost_gpu_price(sim_fleet, start=EMPTY.since, end=EMPTY.until, base_url=prometheus)

    assert found.price is None
    assert found.reason.startswith("Prometheus has no node_gpu_hourly_cost samples in this period")
    assert found.query == "avg by (node) (avg_over_time(node_gpu_hourly_cost[3600s]))"


def test_no_price_when_prometheus_is_unreachable(sim_fleet: Fleet, closed_port: int) -> None:
    found = opencost_gpu_price(
        sim_fleet, start=PRICED.since, end=PRICED.until, base_url=f"http://127.0.0.1:{closed_port}"
    )

    assert found.price is None
    assert found.reason.startswith("Prometheus could not answer (prometheus-unavailable): ")


def test_no_price_when_prometheus_is_not_configured(sim_fleet: Fleet) -> None:
    with override_settings(PROMETHEUS_URL=None):
        found = opencost_gpu_price(sim_fleet, start=PRICED.since, end=PRICED.until)

    assert found.price is None
    assert found.reason == "Prometheus is not configured"


def test_a_period_that_does_not_end_after_it_starts_is_refused(sim_fleet: Fleet) -> None:
    with pytest.raises(ValueError, match="must end after it starts"):
        opencost_gpu_price(
            sim_fleet, start=at(PRICED.end), end=at(PRICED.end), base_url="http://127.0.0.1:1"
        )


def test_a_cost_report_without_an_entered_price_uses_the_opencost_answer(
    prometheus: str, sim_fleet: Fleet
) -> None:
    from capacity.models import FleetPrice
    from capacity.services import cost_review

    FleetPrice.objects.filter(fleet=sim_fleet).update(price_per_gpu_hour_usd=None)
    end = datetime.now(UTC)
    start = end - timedelta(hours=1)
    with override_settings(PROMETHEUS_URL=prometheus):
        direct = opencost_gpu_price(sim_fleet, start=start, end=end)
        review = cost_review(sim_fleet, start=start, end=end, backend="local")
    if direct.price is not None:
        assert review.price_source == direct.price.source
        assert review.report.price_status == "priced"
    else:
        assert review.price_source == f"no price set; no OpenCost price: {direct.reason}"
        assert review.report.price_status == "no price set"


def test_an_entered_price_wins_over_opencost(prometheus: str, sim_fleet: Fleet) -> None:
    from capacity.services import cost_review

    end = datetime.now(UTC)
    with override_settings(PROMETHEUS_URL=prometheus):
        review = cost_review(sim_fleet, start=end - timedelta(hours=1), end=end, backend="local")
    assert review.price_source == "entered for fleet sim"
