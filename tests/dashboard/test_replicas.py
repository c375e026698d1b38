"""The per-replica table over hand-made scrapes: medians, outliers, down replicas, DP engines."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from dashboard.overview import OverviewRequest, overview_compute
from dashboard.panels import Group
from dashboard.precision import WIDE_BUCKET_FRACTION
from dashboard.replicas import COLUMNS, MODEL_SPEC, models_served, outlier, replica_table
from queries import QueryResult, ResultSeries, Window
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


# Edges every replica of the mixed-model fleets below shares: 8b TTFTs under 0.1 s (p99
# 0.099 s), 70b ones between 0.1 and 0.4 s (p99 0.397 s, 4x), a sick 70b between 0.8 and
# 2 s (5x, and the whole bucket is past 1.5x of 0.397 s).
MIXED_EDGES = (0.1, 0.4, 0.8, 2.0)
TTFT_8B_P99 = 0.099
TTFT_70B_P99 = 0.1 + 0.99 * 0.3


def mixed_fleet(
    *, big_now: float = 0.4, slow_8b: bool = False, edges: tuple[float, ...] = MIXED_EDGES
) -> dict[str, dict]:
    """Four llama-8b replicas and one llama-70b with an hour of steady history before."""
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1", "d:1"):
        ttft = 2.0 if slow_8b and name == "d:1" else 0.1
        replica(fleet, name, model="llama-8b", edges=edges, ttft=ttft)
    replica(
        fleet, "big:1", model="llama-70b", edges=edges, ttft=big_now, ttft_before=0.4,
        history=3600,
    )  # fmt: skip
    return replica_table(fleet, end=at(END), backend="local")


def test_a_lone_bigger_model_is_held_to_its_own_past_not_to_the_othermodels_served_median() -> None:
    table = mixed_fleet()
    rows = rows_by_instance(table)
    big = rows["big:1"]
    assert big["model"] == "llama-70b"
    assert big["values"]["ttft_p99"] == pytest.approx(TTFT_70B_P99)
    assert rows["a:1"]["values"]["ttft_p99"] == pytest.approx(TTFT_8B_P99)
    # The old rule (one fleet median) flagged it, before, during and after any incident.
    by_id = {c.id: c for c in COLUMNS}
    assert outlier(big["values"]["ttft_p99"], table["medians"]["ttft_p99"], by_id["ttft_p99"])
    assert all(row["flags"] == {} for row in table["rows"])
    assert big["compared_with"]["ttft_p99"] == "its own previous hour"
    assert big["references"]["ttft_p99"] == pytest.approx(TTFT_70B_P99)
    assert rows["a:1"]["compared_with"]["ttft_p99"] == "median of 4 replicas serving llama-8b"
    assert table["medians_by_model"]["llama-8b"]["ttft_p99"] == pytest.approx(TTFT_8B_P99)
    assert "ttft_p99" not in table["medians_by_model"]["llama-70b"]
    assert table["replicas_by_model"] == {"llama-8b": 4, "llama-70b": 1}
    ttft = next(c for c in table["columns"] if c["id"] == "ttft_p99")
    assert ttft["compared_with"] == [
        "each replica's own previous hour (llama-70b)",
        "median of 4 replicas serving llama-8b",
    ]


def test_a_lone_model_degrading_against_its_own_previous_hour_is_flagged() -> None:
    table = mixed_fleet(big_now=2.0)
    rows = rows_by_instance(table)
    big = rows["big:1"]
    assert big["values"]["ttft_p99"] == pytest.approx(0.8 + 0.99 * 1.2)  # 5x its past
    assert big["buckets"]["ttft_p99"] == [0.8, 2.0]
    assert big["flags"] == {"ttft_p99": "high"}
    assert big["compared_with"]["ttft_p99"] == "its own previous hour"
    assert big["references"]["ttft_p99"] == pytest.approx(TTFT_70B_P99)
    assert big["titles"]["ttft_p99"] == (
        "high against its own previous hour (397 ms): the whole bucket is past the flag threshold"
    )
    assert all(rows[n]["flags"] == {} for n in ("a:1", "b:1", "c:1", "d:1"))


def test_a_slow_replica_is_flagged_against_the_median_of_its_own_model() -> None:
    table = mixed_fleet(slow_8b=True)
    rows = rows_by_instance(table)
    assert rows["d:1"]["flags"] == {"ttft_p99": "high"}
    assert rows["d:1"]["compared_with"]["ttft_p99"] == "median of 4 replicas serving llama-8b"
    assert rows["d:1"]["references"]["ttft_p99"] == pytest.approx(TTFT_8B_P99)
    assert rows["d:1"]["titles"]["ttft_p99"] == (
        "high against the median of 4 replicas serving llama-8b (99 ms): the whole bucket is"
        " past the flag threshold"
    )
    assert all(rows[n]["flags"] == {} for n in ("a:1", "b:1", "c:1", "big:1"))


def test_a_lone_model_with_no_history_an_hour_ago_is_not_flagged_and_says_why() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name, model="llama-8b")
    # Up since just before the table's slice, and slow: nothing to hold it to.
    replica(fleet, "new:1", model="mistral-7b", slow=True, start=15)
    table = replica_table(fleet, end=at(END), backend="local")
    new = rows_by_instance(table)["new:1"]
    assert new["values"]["ttft_p99"] == pytest.approx(0.995)
    assert new["flags"] == {}
    reason = "no peers serving this model and no baseline an hour ago"
    assert new["not_compared"]["ttft_p99"] == reason
    assert new["titles"]["ttft_p99"] == f"not compared: {reason}"
    assert "ttft_p99" not in new["compared_with"]


def test_a_replica_serving_severalmodels_served_goes_with_its_most_requested_one() -> None:
    def series(instance: str, model: str, rate: float | None) -> ResultSeries:
        return ResultSeries({"instance": instance, "model_name": model}, (0.0,), (rate,))

    result = QueryResult(
        "ok",
        (
            series("x:1", "b-model", 3.0), series("x:1", "a-model", 1.0),
            series("y:1", "b-model", 2.0), series("y:1", "a-model", 2.0),  # tie: by name
            series("z:1", "b-model", None), series("z:1", "c-model", 0.0),
        ),
    )  # fmt: skip
    assert MODEL_SPEC == "model"
    assert models_served(result) == {"x:1": "b-model", "y:1": "a-model", "z:1": "c-model"}


# Quantiles from buckets: each p99 carries its bucket, and a wide one is shown (and judged)
# as the bucket, never as its interpolated value alone (dashboard.precision).


def test_each_p99_carries_its_bucket_and_a_wide_one_is_listed_with_its_interpolation() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name)
    replica(fleet, "d:1", slow=True)
    replica(fleet, "e:1", beyond=True)
    # Narrow: every TTFT between 10 and 10.5 s, the p99 interpolated as 10.495 s.
    replica(fleet, "n:1", edges=(0.1, 10.0, 10.5), ttft=10.5)
    table = replica_table(fleet, end=at(END), backend="local")
    rows = rows_by_instance(table)
    assert table["wide_bucket_fraction"] == WIDE_BUCKET_FRACTION == 0.25
    slow = rows["d:1"]
    assert slow["buckets"]["ttft_p99"] == [0.5, 1.0]  # 0.5 s wide at 0.995 s: wide
    assert slow["wide"] == ["ttft_p99"]
    assert (
        slow["interpolated"]["ttft_p99"] == "TTFT p99 interpolated as 995 ms within (500 ms, 1 s]"
    )
    narrow = rows["n:1"]
    assert narrow["buckets"]["ttft_p99"] == [10.0, 10.5]
    assert narrow["values"]["ttft_p99"] == pytest.approx(10.495)
    assert narrow["wide"] == []  # 0.5 s at 10.5 s: under a quarter, the value is shown
    assert (
        narrow["interpolated"]["ttft_p99"]
        == "TTFT p99 interpolated as 10.49 s within (10 s, 10.5 s]"
    )
    past = rows["e:1"]
    assert past["buckets"]["ttft_p99"] == [1.0, None]  # past the last edge: a lower bound
    assert past["above"] == {"ttft_p99": 1.0}
    assert past["wide"] == [] and past["interpolated"] == {}  # no value to interpolate
    # Columns that are not quantiles carry no bucket.
    assert set(slow["buckets"]) == {"ttft_p99"}
    # The fleet median's bucket: the medians of the replicas' edges, which bracket it.
    assert table["median_buckets"]["ttft_p99"] == [0.0, 0.1]
    assert table["medians_wide"] == ["ttft_p99"]
    json.dumps(table, allow_nan=False)


def test_a_down_replica_carries_no_buckets() -> None:
    fleet = fleet_named()
    replica(fleet, "gone:1", up=False)
    gone = rows_by_instance(replica_table(fleet, end=at(END), backend="local"))["gone:1"]
    assert (gone["buckets"], gone["wide"], gone["interpolated"]) == ({}, [], {})


def test_a_wide_bucket_straddling_the_threshold_is_not_flagged_and_says_why() -> None:
    # The 70b replica's p99 moved from (0.1, 0.4] to (0.4, 2] s: interpolated as 1.98 s,
    # 5x its past, but the true p99 may be 0.45 s, under 1.5x. No flag on a guess.
    table = mixed_fleet(big_now=2.0, edges=(0.1, 0.4, 2.0))
    big = rows_by_instance(table)["big:1"]
    assert big["values"]["ttft_p99"] == pytest.approx(0.4 + 0.99 * 1.6)
    by_id = {c.id: c for c in COLUMNS}
    assert outlier(big["values"]["ttft_p99"], TTFT_70B_P99, by_id["ttft_p99"])  # the old flag
    assert big["buckets"]["ttft_p99"] == [0.4, 2.0] and big["wide"] == ["ttft_p99"]
    assert big["flags"] == {}
    assert big["titles"]["ttft_p99"] == (
        "bucket too wide to compare with its own previous hour (397 ms)"
    )


def test_a_wide_bucket_wholly_within_the_threshold_is_compared_and_cleared() -> None:
    table = mixed_fleet()  # the 70b p99 in (0.1, 0.4] s against its own 0.397 s
    big = rows_by_instance(table)["big:1"]
    assert big["wide"] == ["ttft_p99"] and big["flags"] == {}
    assert big["titles"]["ttft_p99"] == (
        "compared with its own previous hour (397 ms): the whole bucket is within the flag"
        " threshold"
    )


def test_a_p99_past_the_last_edge_whose_bound_is_no_outlier_is_too_wide_to_compare() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1", "c:1"):
        replica(fleet, name, slow=True)  # p99 0.995 s in (0.5, 1]
    replica(fleet, "d:1", beyond=True)  # > 1 s: maybe 1.01 s, maybe 100 s
    row = rows_by_instance(replica_table(fleet, end=at(END), backend="local"))["d:1"]
    assert row["flags"] == {}
    assert row["titles"]["ttft_p99"] == (
        "bucket too wide to compare with the median of 3 replicas serving llama (995 ms)"
    )
