"""SLO status on hand-made scrapes whose every figure can be worked out by hand."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from django.test import override_settings

from inventory.models import Fleet
from slo.evaluation import slo_status
from slo.models import Objective, Slo
from tests.queries.storefill import Sample, at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = pytest.mark.django_db

TTFT = "vllm:time_to_first_token_seconds"
SUCCESS = "vllm:request_success_total"
TYPES = {TTFT: "histogram", "vllm:request_success": "counter"}
MINUTES = 120
END = at(MINUTES * 60)
# Per minute, cumulative by edge: replica a puts 8 of 10 under 2 s, replica b 9 of 10.
A_PER_MINUTE = {"1": 5.0, "2": 8.0, "5": 9.0, "+Inf": 10.0}
B_PER_MINUTE = {"1.0": 8.0, "2.0": 9.0, "5.0": 10.0, "+Inf": 10.0}
A_FINISHES = {"stop": 9.0, "error": 1.0}
B_FINISHES = {"stop": 10.0}


def scrapes(
    per_minute: Mapping[str, float], finishes: Mapping[str, float], *,
    reset_at_minute: int | None = None, quiet: bool = False,
) -> list[tuple[float, list[Sample]]]:  # fmt: skip
    found = []
    for minute in range(MINUTES + 1):
        n = 0 if quiet else minute
        if reset_at_minute is not None and minute >= reset_at_minute:
            n = minute - reset_at_minute  # the process restarted: counters start again
        samples = histogram(TTFT, {"model_name": "m"}, {le: c * n for le, c in per_minute.items()})
        samples += [
            (SUCCESS, {"model_name": "m", "finished_reason": reason}, c * n)
            for reason, c in finishes.items()
        ]
        found.append((minute * 60.0, samples))
    return found


def fleet_of(
    *replicas: tuple[str, Mapping[str, float], Mapping[str, float]],
    reset_at_minute: int | None = None,
    quiet: bool = False,
) -> Fleet:
    fleet = fleet_named()
    for instance, per_minute, finishes in replicas:
        made = scrapes(per_minute, finishes, reset_at_minute=reset_at_minute, quiet=quiet)
        endpoint_with_scrapes(fleet, instance, made, types=TYPES)
    return fleet


def slo_on(fleet: Fleet, *objectives: tuple[str, float | None, float]) -> Slo:
    slo = Slo.objects.create(fleet=fleet, slug="s", name="S", window_days=28)
    for kind, threshold, target in objectives:
        Objective.objects.create(slo=slo, kind=kind, threshold_seconds=threshold, target=target)
    return slo


def test_a_threshold_on_an_edge_spelled_two_ways_gives_the_exact_fleet_fraction() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES), ("b:1", B_PER_MINUTE, B_FINISHES))
    status = slo_status(slo_on(fleet, ("ttft", 2.0, 0.8)), backend="local", at=END)
    ttft = status.objectives[0]
    assert ttft.attainment is not None and ttft.attainment.is_exact
    assert ttft.attainment.lower == pytest.approx(17 / 20)
    assert ttft.verdict == "met"
    assert ttft.reason == "exact: 2 s is a bucket edge on all 2 replicas"
    assert ttft.provenance.edges_used == (2.0,)
    assert ttft.provenance.metric_names == (TTFT,)
    # One bad replica is visible inside the fleet figure, worst first.
    assert [r.instance for r in ttft.replicas] == ["a:1", "b:1"]
    assert ttft.replicas[0].attainment is not None
    assert ttft.replicas[0].attainment.lower == pytest.approx(0.8)


def test_a_threshold_between_edges_gives_an_interval_and_an_undecided_state() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES), ("b:1", B_PER_MINUTE, B_FINISHES))
    status = slo_status(slo_on(fleet, ("ttft", 3.0, 0.9)), backend="local", at=END)
    ttft = status.objectives[0]
    assert ttft.attainment is not None
    assert ttft.attainment.lower == pytest.approx(0.85)
    assert ttft.attainment.upper == pytest.approx(0.95)
    assert ttft.verdict == "undecided"
    assert ttft.state == "undecided" and status.state == "undecided"
    assert ttft.reason.startswith("threshold 3 s lies between buckets 2 s and 5 s on 2 of 2")


def test_replicas_with_different_grids_are_summed_only_at_edges_they_share() -> None:
    c_per_minute = {"1": 8.0, "5": 10.0, "+Inf": 10.0}  # no 2 s edge
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES), ("c:1", c_per_minute, B_FINISHES))
    ttft = slo_status(slo_on(fleet, ("ttft", 2.0, 0.8)), backend="local", at=END).objectives[0]
    assert ttft.attainment is not None
    assert ttft.attainment.lower == pytest.approx(13 / 20)  # at 1 s: 5 + 8
    assert ttft.attainment.upper == pytest.approx(19 / 20)  # at 5 s: 9 + 10
    assert ttft.provenance.edges_used == (1.0, 5.0)
    assert "on 1 of 2 replicas" in ttft.reason and "it is an edge on 1" in ttft.reason


def test_the_success_ratio_counts_errors_as_bad_and_feeds_goodput() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES), ("b:1", B_PER_MINUTE, B_FINISHES))
    status = slo_status(
        slo_on(fleet, ("success", None, 0.9), ("ttft", 2.0, 0.8)), backend="local", at=END
    )
    success = next(o for o in status.objectives if o.kind == "success")
    assert success.attainment is not None
    assert success.attainment.lower == pytest.approx(19 / 20)
    goodput = status.goodput
    assert goodput is not None and goodput.fraction is not None
    # TTFT 0.85 and success 0.95 of the same 20 requests a minute: 0.80 .. 0.85.
    assert goodput.fraction.lower == pytest.approx(0.80)
    assert goodput.fraction.upper == pytest.approx(0.85)
    assert not goodput.exact
    assert goodput.requests_per_second is not None
    assert goodput.requests_per_second.upper == pytest.approx(0.85 * 20 / 60)


def test_a_counter_reset_inside_the_window_neither_jumps_nor_turns_the_budget_negative() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES), ("b:1", B_PER_MINUTE, B_FINISHES),
                     reset_at_minute=60)  # fmt: skip
    ttft = slo_status(slo_on(fleet, ("ttft", 2.0, 0.8)), backend="local", at=END).objectives[0]
    assert ttft.attainment is not None
    assert ttft.attainment.lower == pytest.approx(0.85)
    assert ttft.budget_remaining is not None and 0.0 <= ttft.budget_remaining.lower <= 1.0
    assert ttft.hourly is not None
    assert all(b is None or 0.0 <= b <= 1.0 for b in ttft.hourly.budget_lower)


def test_no_traffic_is_no_data_never_zero_or_one_hundred_percent() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES), quiet=True)
    status = slo_status(slo_on(fleet, ("ttft", 2.0, 0.8)), backend="local", at=END)
    assert status.state == "no-data"
    assert status.objectives[0].attainment is None
    assert "no data" in status.objectives[0].unavailable


def test_an_slo_longer_than_the_store_says_how_much_it_covers() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES))
    status = slo_status(slo_on(fleet, ("ttft", 2.0, 0.8)), backend="local", at=END)
    assert status.held_seconds == pytest.approx(7200)
    assert status.window_note.startswith("attainment over the 2 h held locally, not the whole 28 d")


def test_an_objective_the_fleet_does_not_expose_says_so() -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES))
    e2e = slo_status(slo_on(fleet, ("e2e", 2.0, 0.8)), backend="local", at=END).objectives[0]
    assert e2e.state == "no-data" and e2e.attainment is None
    assert e2e.unavailable


def test_a_prometheus_that_does_not_answer_is_said_so_not_shown_as_an_idle_fleet(
    closed_port: int,
) -> None:
    fleet = fleet_of(("a:1", A_PER_MINUTE, A_FINISHES))
    with override_settings(PROMETHEUS_URL=f"http://127.0.0.1:{closed_port}"):
        status = slo_status(slo_on(fleet, ("ttft", 2.0, 0.8)), backend="prometheus", at=END)
    ttft = status.objectives[0]
    assert status.state == "no-data" and ttft.attainment is None
    assert ttft.unavailable.startswith("prometheus-unavailable: ")
    assert "no events" not in ttft.unavailable
