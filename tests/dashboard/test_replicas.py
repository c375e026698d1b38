"""The per-replica table over hand-made scrapes: medians, outliers, down replicas, DP engines."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dashboard.overview import OverviewRequest, overview_compute
from dashboard.panels import Group
from dashboard.replicas import COLUMNS, outlier, replica_table
from queries import Window
from tests.dashboard.replicafill import END, replica
from tests.queries.storefill import at, fleet_named

pytestmark = pytest.mark.django_db


def rows_by_instance(table: dict) -> dict[str, dict]:
    return {row["instance"]: row for row in table["rows"]}


def test_a_slow_replica_is_flagged_against_the_fleet_median() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name)
    replica(fleet, "d:1", slow=True)
    table = replica_table(fleet, end=at(END), backend="local")
    rows = rows_by_instance(table)
    assert rows["d:1"]["values"]["ttft_p99"] == pytest.approx(0.995)
    assert rows["a:1"]["values"]["ttft_p99"] == pytest.approx(0.099)
    assert table["medians"]["ttft_p99"] == pytest.approx(0.099)
    assert rows["d:1"]["flags"] == {"ttft_p99": "high"}
    assert all(rows[n]["flags"] == {} for n in ("a:1", "b:1", "c:1"))
    assert rows["a:1"]["values"]["requests"] == pytest.approx(1.0)
    assert rows["a:1"]["values"]["tokens"] == pytest.approx(50.0)


def test_a_p99_past_the_last_bucket_edge_is_a_flagged_lower_bound_not_a_value() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name)
    replica(fleet, "d:1", beyond=True)
    rows = rows_by_instance(replica_table(fleet, end=at(END), backend="local"))
    assert rows["d:1"]["values"]["ttft_p99"] is None
    assert rows["d:1"]["above"] == {"ttft_p99": 1.0}
    assert rows["d:1"]["flags"] == {"ttft_p99": "high"}
    assert rows["a:1"]["above"] == {}


def test_data_parallel_engines_add_queues_and_take_the_fullest_kv_cache() -> None:
    fleet = fleet_named()
    replica(fleet, "dp:1", waiting=(2, 3), kv=(0.3, 0.6))
    row = rows_by_instance(replica_table(fleet, end=at(END), backend="local"))["dp:1"]
    assert row["values"]["waiting"] == 5.0
    assert row["values"]["kv"] == pytest.approx(0.6)
    assert row["values"]["requests"] == pytest.approx(2.0)


def test_a_replica_that_stopped_answering_is_down_with_the_reason_not_zero() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name, waiting=(1,))
    replica(fleet, "gone:1", up=False, waiting=(40,))
    table = replica_table(fleet, end=at(END), backend="local")
    gone = rows_by_instance(table)["gone:1"]
    assert gone["state"] == "down"
    assert gone["note"] == "down since 12:04 UTC: connection refused"
    assert gone["values"] == {} and gone["flags"] == {}
    # Its last queue length (40) would have dragged the median; it is left out.
    assert table["medians"]["waiting"] == 1.0


def test_two_replicas_are_too_few_for_a_median_so_nothing_is_flagged() -> None:
    fleet = fleet_named()
    replica(fleet, "a:1")
    replica(fleet, "b:1", slow=True)
    table = replica_table(fleet, end=at(END), backend="local")
    assert table["medians"] == {}
    assert all(row["flags"] == {} for row in table["rows"])


def test_a_figure_the_fleet_does_not_expose_is_blank_with_the_reason() -> None:
    fleet = fleet_named()
    replica(fleet, "a:1")
    table = replica_table(fleet, end=at(END), backend="local")
    row = rows_by_instance(table)["a:1"]
    assert row["values"]["itl_p99"] is None
    assert "itl" in table["notes"]["itl_p99"]
    assert "ttft_p99" not in table["notes"]


@pytest.mark.parametrize(
    ("value", "median", "column", "flagged"),
    [
        (0.995, 0.099, "ttft_p99", True),
        (0.12, 0.099, "ttft_p99", False),  # 1.2x: within the fleet's spread
        (0.02, 0.01, "ttft_p99", False),  # 2x, but only 10 ms apart
        (0.3, 1.0, "requests", True),  # a starved replica
        (1.8, 1.0, "requests", False),  # busier than the median is not a fault
        (0.95, 0.7, "kv", True),
    ],
)
def test_outlier_rule(value: float, median: float, column: str, flagged: bool) -> None:
    by_id = {c.id: c for c in COLUMNS}
    assert outlier(value, median, by_id[column]) is flagged


def test_the_overview_carries_the_table_and_group_pages_do_not() -> None:
    fleet = fleet_named()
    replica(fleet, "a:1")
    window = Window(at(END) - timedelta(minutes=5), at(END), 15)
    whole = overview_compute(OverviewRequest(fleet, window, "local"))
    assert [row["instance"] for row in whole["replicas"]["rows"]] == ["a:1"]
    latency = overview_compute(OverviewRequest(fleet, window, "local", group=Group.LATENCY))
    assert "replicas" not in latency
    assert {p["group"] for p in latency["panels"]} == {"latency"}


def test_the_table_still_compares_every_replica_when_one_is_chosen() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name)
    replica(fleet, "d:1", slow=True)
    window = Window(at(END) - timedelta(minutes=5), at(END), 15)
    one = overview_compute(OverviewRequest(fleet, window, "local", instance="d:1"))
    rows = rows_by_instance(one["replicas"])
    assert rows["a:1"]["values"]["ttft_p99"] == pytest.approx(0.099)
    assert rows["d:1"]["flags"] == {"ttft_p99": "high"}
    # The panels, though, are that replica's alone: its p99, not the fleet's.
    ttft = next(p for p in one["panels"] if p["id"] == "latency.ttft")
    p99 = next(t for t in ttft["figure"]["data"] if t["name"] == "p99")
    assert p99["y"][-1] == pytest.approx(0.995)
