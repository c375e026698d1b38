"""How the SLO pages word their figures: exact values, intervals, missing data, order."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from slo import figures, pages
from slo.evaluation import (
    BurnRow,
    Goodput,
    HourlyAttainment,
    Interval,
    ObjectiveStatus,
    Provenance,
    ReplicaAttainment,
    SloStatus,
    State,
    WindowBurn,
)
from slo.evaluation.figures import Firing

EXACT = Interval.exact(0.9931)


def window(label: str, burn: Interval | None) -> WindowBurn:
    return WindowBurn(3600.0, label, 1200.0, Interval(0.01, 0.02), burn)


def burn_row(pair: str, firing: Firing, note: str = "") -> BurnRow:
    return BurnRow(
        pair=pair,
        severity="page",
        factor=14.4,
        long=window("1h", Interval(10.0, 20.0)),
        short=window("5m", Interval.exact(15.0)),
        firing=firing,
        note=note,
    )


def objective(
    kind: str = "ttft",
    *,
    attainment: Interval | None = EXACT,
    state: State = "ok",
    burn: tuple[BurnRow, ...] = (),
    replicas: tuple[ReplicaAttainment, ...] = (),
    unavailable: str = "",
) -> ObjectiveStatus:
    return ObjectiveStatus(
        kind=kind,
        label=kind.upper(),
        threshold_seconds=0.3,
        target=0.99,
        events_name="requests",
        attainment=attainment,
        verdict="met",
        reason="0.3 s lies between the bucket edges 0.25 and 0.5",
        events=1000.0,
        bad_events=Interval(5.0, 9.0),
        budget_remaining=Interval(0.2, 0.4),
        exhaustion_seconds=None,
        state=state,
        burn=burn,
        slow=None,
        replicas=replicas,
        hourly=None,
        provenance=Provenance("local", "a window", ("vllm:time_to_first_token_seconds",)),
        unavailable=unavailable,
    )


def status(name: str, budget: Interval | None, **more: Any) -> SloStatus:
    base = SloStatus(
        slo_id=1,
        fleet="prod",
        slug=name.lower(),
        name=name,
        window_days=28,
        held_seconds=19 * 3600.0,
        window_note="28 d; 19 h held locally",
        backend="local",
        at=1_795_000_000.0,
        state="ok",
        objectives=(objective(),),
        goodput=None,
        budget_remaining=budget,
        worst_objective=None,
    )
    return replace(base, **more)


def test_an_exact_attainment_reads_as_one_percentage() -> None:
    shown = pages.attainment_shown(objective(attainment=Interval.exact(0.9931)))
    assert (shown.text, shown.exact, shown.missing) == ("99.31%", True, False)


def test_an_interval_attainment_reads_as_its_bounds_with_the_reason_as_title() -> None:
    shown = pages.attainment_shown(objective(attainment=Interval(0.991, 0.994)))
    assert shown.text == "99.10\u201399.40%"
    assert not shown.exact
    assert "between the bucket edges 0.25 and 0.5" in shown.title


def test_a_near_perfect_attainment_is_never_rounded_up_to_100_percent() -> None:
    assert pages.percent(0.99999) == "99.999%"
    assert pages.percent(0.999996) == "99.9996%"
    assert pages.percent(1.0) == "100.00%"


def test_an_unavailable_objective_says_so_and_never_shows_zero() -> None:
    why = "this fleet does not expose per-request TPOT (vLLM 0.10)"
    shown = pages.attainment_shown(objective(attainment=None, unavailable=why))
    assert shown.text == "unavailable" and shown.title == why and shown.missing
    assert "0" not in shown.text


def test_an_objective_without_events_says_no_data() -> None:
    assert pages.attainment_shown(objective(attainment=None)).text == "no data"


def test_goodput_bounds_are_labelled_as_bounds() -> None:
    assert pages.goodput_rate_shown(Interval(1.2, 1.5), "req/s").text == "bounds 1.2\u20131.5 req/s"
    assert pages.goodput_rate_shown(Interval.exact(1.25), "req/s").text == "1.25 req/s"
    assert pages.goodput_rate_shown(None, "req/s").text == "no data"


def test_budget_and_burn_show_intervals_when_inexact() -> None:
    assert pages.budget_shown(Interval(0.12, 0.4)).text == "12\u201340%"
    assert pages.budget_shown(Interval.exact(-0.35)).text == "-35%"
    assert pages.burn_shown(Interval(3.1, 5.2)).text == "3.1\u20135.2\u00d7"
    assert pages.burn_shown(Interval.exact(14.4)).text == "14.4\u00d7"


def test_objective_titles_state_threshold_target_and_events() -> None:
    assert pages.objective_title(objective()) == "TTFT \u2264 300 ms for 99% of requests"
    success = replace(objective("success"), threshold_seconds=None, target=0.999)
    assert pages.objective_title(success) == "SUCCESS \u2265 99.9% of requests"


def test_the_list_puts_the_lowest_budget_first_and_slos_without_budget_last() -> None:
    rows = pages.slo_rows(
        [
            status("Healthy", Interval.exact(0.9)),
            status("Unknown", None),
            status("Burning", Interval(-0.2, 0.1)),
            status("Tight", Interval.exact(0.05)),
        ]
    )
    assert [row.status.name for row in rows] == ["Burning", "Tight", "Healthy", "Unknown"]


def test_the_worst_alert_is_the_firing_pair_whatever_its_position() -> None:
    o = objective(
        burn=(
            burn_row("6h/30m", "quiet"),
            burn_row("1h/5m", "firing"),
            burn_row("3d/6h", "too-few", "too few requests to page: 3 in 1h"),
        )
    )
    alert = pages.worst_alert(status("Chat", Interval.exact(0.5), objectives=(o,)))
    assert alert is not None
    assert alert.text == "TTFT 1h/5m page: firing" and alert.colour == "bad"


def test_burn_rows_keep_the_too_few_note() -> None:
    o = objective(burn=(burn_row("1h/5m", "too-few", "too few requests to page: 3 in 1h"),))
    (row,) = pages.burn_rows_shown(o)
    assert row.firing_label == "too few events"
    assert row.note == "too few requests to page: 3 in 1h"
    assert row.long.burn.text == "10\u201320\u00d7" and row.short.burn.text == "15\u00d7"


def test_replicas_are_listed_worst_first() -> None:
    o = objective(
        replicas=(
            ReplicaAttainment("10.0.0.1:8000", Interval.exact(0.999), 500.0, "met"),
            ReplicaAttainment("10.0.0.4:8000", None, 0.0, "no-data"),
            ReplicaAttainment("10.0.0.2:8000", Interval(0.95, 0.97), 500.0, "breached"),
            ReplicaAttainment("10.0.0.3:8000", Interval(0.985, 0.995), 500.0, "undecided"),
        )
    )
    shown = pages.replicas_shown(o)
    assert [r.instance for r in shown] == [
        "10.0.0.2:8000",
        "10.0.0.3:8000",
        "10.0.0.1:8000",
        "10.0.0.4:8000",
    ]
    assert shown[0].attainment.text == "95.00\u201397.00%"
    assert shown[-1].attainment.text == "no data"


def test_goodput_view_lists_what_it_left_out() -> None:
    goodput = Goodput(
        fraction=Interval(0.9, 0.95),
        requests_per_second=Interval(1.2, 1.5),
        good_output_tokens_per_second=None,
        exact=False,
        objectives=("ttft", "e2e"),
        left_out=("itl: counts token gaps, not requests",),
        note="",
    )
    view = pages.goodput_view(goodput)
    assert view is not None
    assert view.requests_per_second.text == "bounds 1.2\u20131.5 req/s"
    assert view.good_tokens_per_second.text == "no data"
    assert view.left_out == ("itl: counts token gaps, not requests",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("yesterday", "is not an ISO 8601 time"),
        ("2026-12-01T10:00:00", "needs a time zone"),
    ],
)
def test_a_malformed_at_is_refused_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(pages.ParameterError, match=message):
        pages.at_parse(text)


def test_at_and_backend_parse() -> None:
    parsed = pages.params_parse({"at": "2026-12-01T10:00:00+01:00", "backend": "prometheus"})
    assert parsed.at is not None and parsed.at.isoformat() == "2026-12-01T09:00:00+00:00"
    assert parsed.backend == "prometheus"
    assert pages.params_parse({}).backend == "local"
    with pytest.raises(pages.ParameterError, match="backend must be one of local, prometheus"):
        pages.backend_parse("graphite")


def test_the_attainment_chart_draws_an_interval_as_a_band_and_the_target_as_a_line() -> None:
    hourly = HourlyAttainment(
        timestamps=(3600.0, 7200.0),
        lower=(0.98, None),
        upper=(0.995, None),
        events=(100.0, None),
        budget_lower=(0.5, None),
        budget_upper=(0.7, None),
    )
    figure = figures.attainment_figure(replace(objective(), hourly=hourly))
    assert figure is not None
    lower, upper = figure["data"]
    assert lower["y"] == [98.0, None] and upper["y"] == [99.5, None]  # the gap stays a gap
    assert upper["fill"] == "tonexty"
    # UTC as written: plotly.js would shift epoch milliseconds into the browser's zone.
    assert lower["x"] == ["1970-01-01 01:00:00.000", "1970-01-01 02:00:00.000"]
    assert figure["layout"]["shapes"][0]["y0"] == 99.0
    budget = figures.budget_figure(hourly)
    assert budget is not None and [t["y"] for t in budget["data"]] == [[50.0, None], [70.0, None]]


def test_an_exact_hourly_series_is_drawn_as_one_line() -> None:
    hourly = HourlyAttainment((3600.0,), (0.99,), (0.99,), (10.0,))
    figure = figures.attainment_figure(replace(objective(), hourly=hourly))
    assert figure is not None and len(figure["data"]) == 1
    assert figures.budget_figure(hourly) is None  # no budget series: nothing drawn


def test_the_window_says_how_much_of_it_is_held() -> None:
    shown = pages.window_shown(status("Chat", None))
    assert shown.text == "28 d; 19 h held locally"
    assert shown.title == "28 d; 19 h held locally"  # the evaluation's note
    whole = status("Chat", None, held_seconds=28 * 86_400.0, backend="prometheus")
    assert pages.window_shown(whole).text == "28 d"


def test_an_interval_budget_that_may_be_spent_is_not_called_exhausted() -> None:
    maybe = replace(objective(), exhaustion_seconds=0.0, budget_remaining=Interval(0.0, 0.33))
    assert pages.exhaustion_text(maybe) == (
        "possibly already: the budget left is known only to lie in 0\u201333%"
    )
    spent = replace(maybe, budget_remaining=Interval.exact(0.0))
    assert pages.exhaustion_text(spent) == "already exhausted"
    assert pages.exhaustion_text(replace(maybe, exhaustion_seconds=None)) == (
        "not at the last day's burn rate"
    )
