"""Figure JSON from query results: heatmap buckets, stacked areas, the kind dispatch."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.figures import Drawn, line_figure, log_scale_by_default, panel_figure
from dashboard.heatmaps import bucket_rates
from dashboard.precision import WIDE_BUCKET_FRACTION, bucket_is_wide, spans_decades
from queries import QueryResult, ResultSeries

T = (1_700_000_000.0, 1_700_000_015.0, 1_700_000_030.0)
Values = Sequence[float | None]


def buckets(cumulative: Mapping[str, Values], **labels: str) -> list[ResultSeries]:
    """One `_bucket` rate series per `le`, as Rate(key, by=(..., "le")) returns them."""
    return [ResultSeries({**labels, "le": le}, T, tuple(v)) for le, v in cumulative.items()]


def ok(*series: ResultSeries) -> dict[str, QueryResult]:
    return {"per bucket": QueryResult("ok", series)}


def drawn_heatmap(series: Sequence[ResultSeries]) -> Drawn:
    return panel_figure("heatmap", ok(*series), unit="tokens")


def heatmap(series: Sequence[ResultSeries]) -> dict:
    return drawn_heatmap(series).figure


def strict_json(figure: dict) -> dict:
    # What the page receives: bare NaN or Infinity would break JSON.parse.
    return json.loads(json.dumps(figure, allow_nan=False))


def test_heatmap_turns_cumulative_bucket_rates_into_observations_per_bucket() -> None:
    figure = heatmap(buckets({"1": [2, 2, 2], "10": [5, 5, 5], "+Inf": [9, 9, 9]}))
    (trace,) = figure["data"]
    assert trace["type"] == "heatmap"
    assert trace["y"] == ["≤1", "≤10", "+Inf"]
    assert trace["z"] == [[2, 2, 2], [3, 3, 3], [4, 4, 4]]
    assert trace["x"] == [utc(t) for t in T]
    assert figure["layout"]["yaxis"]["categoryarray"] == ["≤1", "≤10", "+Inf"]


def test_heatmap_sorts_edges_as_numbers_with_inf_last_not_as_text() -> None:
    shuffled = {"+Inf": [7, 7, 7], "10": [6, 6, 6], "2.5": [3, 3, 3], "0.5": [1, 1, 1]}
    (trace,) = heatmap(buckets(shuffled))["data"]
    assert trace["y"] == ["≤0.5", "≤2.5", "≤10", "+Inf"]
    assert [row[0] for row in trace["z"]] == [1, 2, 3, 1]


def test_heatmap_treats_le_1_and_1_0_as_one_edge() -> None:
    series = buckets({"1": [1, 1, 1], "+Inf": [2, 2, 2]}, engine="0")
    series += buckets({"1.0": [3, 3, 3], "+Inf": [5, 5, 5]}, engine="0")
    (trace,) = heatmap(series)["data"]
    assert trace["y"] == ["≤1", "+Inf"]
    assert trace["z"] == [[4, 4, 4], [3, 3, 3]]


def test_heatmap_gaps_stay_null_and_the_json_has_no_nan() -> None:
    series = buckets(
        {"1": [1.0, None, math.nan], "10": [2.0, None, math.inf], "+Inf": [4.0, None, 5.0]}
    )
    figure = strict_json(heatmap(series))
    (trace,) = figure["data"]
    assert trace["z"] == [[1, None, None], [1, None, None], [2, None, None]]
    assert trace["hoverongaps"] is False


def test_heatmap_clamps_float_noise_to_zero_but_never_shows_a_negative_bucket() -> None:
    # 0.1 + 0.2 is 0.30000000000000004: a rate just above the next edge's 0.3.
    noisy = buckets({"1": [0.1 + 0.2] * 3, "10": [0.3] * 3, "+Inf": [1.0] * 3})
    (trace,) = heatmap(noisy)["data"]
    assert trace["z"][1] == [0, 0, 0]
    assert trace["z"][2] == [0.7, 0.7, 0.7]
    assert all(v is None or v >= 0 for row in trace["z"] for v in row)


def test_heatmap_leaves_a_step_whose_buckets_count_down_blank_and_says_why() -> None:
    falling = buckets({"1": [2, 8, 2], "10": [5, 5, 5], "+Inf": [9, 9, 9]})
    drawn = drawn_heatmap(falling)
    (trace,) = drawn.figure["data"]
    assert trace["z"] == [[2, None, 2], [3, None, 3], [4, None, 4]]
    assert drawn.notes == ("buckets decrease at le=10 in 1 step(s): left blank, not trusted",)
    assert drawn.incomplete


def test_heatmap_sums_replicas_only_on_the_edges_they_all_have() -> None:
    # A replica with max_model_len 32768 buckets up to 20000, one with 16384 up to 10000.
    long = buckets({"10000": [4, 4, 4], "20000": [6, 6, 6], "+Inf": [6, 6, 6]}, instance="a:1")
    short = buckets({"10000": [1, 1, 1], "+Inf": [2, 2, 2]}, instance="b:1")
    drawn = drawn_heatmap(long + short)
    (trace,) = drawn.figure["data"]
    assert trace["y"] == ["≤10000", "+Inf"]
    assert trace["z"] == [[5, 5, 5], [3, 3, 3]]
    assert drawn.notes == ("le=20000 not on all replicas: merged up",)
    assert not drawn.incomplete  # merged, not dropped


def test_heatmap_adds_up_the_replicas_present_at_a_step() -> None:
    up = buckets({"1": [1, 1, 1], "+Inf": [2, 2, 2]}, instance="a:1")
    restarting = buckets({"1": [None, 1, 1], "+Inf": [None, 3, 3]}, instance="b:1")
    (trace,) = heatmap(up + restarting)["data"]
    assert trace["z"] == [[1, 2, 2], [1, 3, 3]]


def test_bucket_rates_of_no_series_are_empty_not_an_error() -> None:
    empty = bucket_rates([])
    assert (empty.edges, empty.rows, empty.notes) == ((), (), ())
    assert heatmap([])["data"] == []


def phases(queue: Values, prefill: Values, decode: Values) -> dict[str, QueryResult]:
    def one(values: Values) -> QueryResult:
        return QueryResult("ok", (ResultSeries({}, T, tuple(values)),))

    return {"queue": one(queue), "prefill": one(prefill), "decode": one(decode)}


def test_stacked_figure_stacks_the_traces_bottom_up_in_panel_order() -> None:
    figure = panel_figure("stacked", phases([1, 1, 1], [2, 2, 2], [3, 3, 3]), unit="seconds").figure
    assert [t["name"] for t in figure["data"]] == ["queue", "prefill", "decode"]
    assert {t["stackgroup"] for t in figure["data"]} == {"run0"}
    assert [t["y"] for t in figure["data"]] == [[1, 1, 1], [2, 2, 2], [3, 3, 3]]
    assert figure["layout"]["xaxis"]["range"] == [utc(T[0]), utc(T[-1])]
    assert figure["layout"]["yaxis"]["title"]["text"] == "seconds"


def test_a_step_with_a_missing_layer_is_a_gap_in_the_whole_stack_not_a_zero() -> None:
    figure = panel_figure("stacked", phases([1, 1, 1], [2, None, 2], [3, 3, 3]), unit="s").figure
    runs = [(t["stackgroup"], t["name"], t["y"], t["showlegend"]) for t in figure["data"]]
    assert runs == [
        ("run0", "queue", [1], True),
        ("run0", "prefill", [2], True),
        ("run0", "decode", [3], True),
        ("run1", "queue", [1], False),
        ("run1", "prefill", [2], False),
        ("run1", "decode", [3], False),
    ]
    colours = {(t["name"], t["line"]["color"]) for t in figure["data"]}
    assert len(colours) == 3  # one colour per layer across runs
    strict_json(figure)


def test_a_stack_that_is_never_whole_falls_back_to_lines_with_gaps() -> None:
    figure = panel_figure(
        "stacked", phases([1, None, 1], [None, 2, None], [3, 3, 3]), unit="s"
    ).figure
    assert all("stackgroup" not in t for t in figure["data"])
    assert figure["data"][1]["y"] == [None, 2, None]


def test_line_is_the_default_and_an_unknown_kind_is_refused() -> None:
    figure = panel_figure("line", phases([1, 1, 1], [2, 2, 2], [3, 3, 3]), unit="s").figure
    assert {t["mode"] for t in figure["data"]} == {"lines"}
    with pytest.raises(ValueError, match="unknown panel kind 'pie'"):
        panel_figure("pie", {}, unit="s")  # type: ignore[arg-type]  # bad kind on purpose


def utc(seconds: float) -> str:
    """The wall-clock UTC text of the whole millisecond nearest `seconds`."""
    ms = round(seconds * 1000)
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"


# Timestamps that end in half a millisecond as well as arbitrary ones: round() rounds
# half to even, and x must be exactly that millisecond either way.
TIMESTAMPS = st.one_of(
    st.integers(0, 8 * 10**12).map(lambda k: k / 2000),
    st.floats(min_value=0, max_value=4e9, allow_nan=False),
)
GAPPY = st.one_of(st.none(), st.sampled_from([math.nan, math.inf, -math.inf, -0.0]), st.floats())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TIMESTAMPS, GAPPY, GAPPY), min_size=1, max_size=8), st.booleans())
def test_line_traces_are_exact_utc_milliseconds_and_values_with_every_non_finite_one_null(
    points: list[tuple[float, float | None, float | None]], from_array: bool
) -> None:
    stamps = tuple(t for t, _, _ in points)
    columns = ([a for _, a, _ in points], [b for _, _, b in points])

    def built(values: list[float | None]) -> ResultSeries:
        if from_array:
            array = np.array([math.nan if v is None else v for v in values])
            return ResultSeries.from_array({}, stamps, array)
        return ResultSeries({}, stamps, tuple(values))

    results = {
        "a": QueryResult("ok", (built(columns[0]),)),
        "b": QueryResult("ok", (built(columns[1]),)),
    }
    figure = line_figure(results, unit="s")
    for trace, values in zip(figure["data"], columns, strict=True):
        assert trace["x"] == [utc(t) for t in stamps]
        expected = [v if v is not None and math.isfinite(v) else None for v in values]
        assert repr(trace["y"]) == repr(expected)  # -0.0 stays -0.0
    strict_json(figure)


def test_traces_on_one_grid_each_get_their_own_x_list() -> None:
    figure = panel_figure("line", phases([1, 1, 1], [2, 2, 2], [3, 3, 3]), unit="s").figure
    first, second, _ = figure["data"]
    first["x"].append(0)  # a caller editing one trace leaves the others and later figures be
    assert len(second["x"]) == len(T)
    again = panel_figure("line", phases([1, 1, 1], [2, 2, 2], [3, 3, 3]), unit="s").figure
    assert again["data"][0]["x"] == [utc(t) for t in T]


def test_a_nan_or_infinite_layer_value_is_a_gap_in_the_whole_stack() -> None:
    def layer(values: list[float]) -> QueryResult:
        return QueryResult("ok", (ResultSeries.from_array({}, T, np.array(values)),))

    results = {
        "queue": layer([1.0, math.nan, 1.0]),
        "prefill": layer([2.0, 2.0, 2.0]),
        "decode": layer([3.0, 3.0, math.inf]),
    }
    figure = strict_json(panel_figure("stacked", results, unit="s").figure)
    runs = {(t["stackgroup"], t["name"]): (t["x"], t["y"]) for t in figure["data"]}
    assert runs == {
        ("run0", "queue"): ([utc(T[0])], [1.0]),
        ("run0", "prefill"): ([utc(T[0])], [2.0]),
        ("run0", "decode"): ([utc(T[0])], [3.0]),
    }


def test_a_quantile_known_only_as_a_lower_bound_is_drawn_as_markers_at_the_edge() -> None:
    series = ResultSeries(
        {}, (0.0, 15.0, 30.0), (0.5, None, None), lower=(0.1, 10.0, None), upper=(1.0, None, None)
    )
    figure = line_figure({"p99": QueryResult("ok", (series,))}, unit="seconds")
    line, bound = figure["data"]
    assert line["y"] == [0.5, None, None]
    assert bound["mode"] == "markers" and bound["name"] == "p99: above (lower bound)"
    assert bound["y"] == [None, 10.0, None]


def test_a_quantile_with_a_value_at_every_step_has_no_bound_markers() -> None:
    series = ResultSeries({}, (0.0, 15.0), (0.5, 0.7), lower=(0.1, 0.5), upper=(1.0, 1.0))
    figure = line_figure({"p99": QueryResult("ok", (series,))}, unit="seconds")
    assert len(figure["data"]) == 1


def test_hover_text_rounds_to_four_significant_figures_with_the_unit_and_data_stays_exact() -> None:
    series = ResultSeries({"instance": "d:9400"}, T, (196.9176, 79123.4, None))
    line = line_figure({"by exporter": QueryResult("ok", (series,))}, unit="MiB")
    (trace,) = line["data"]
    assert trace["y"] == [196.9176, 79123.4, None]
    assert trace["hovertemplate"] == "%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{y:,.4~r} MiB"
    assert line["layout"]["yaxis"]["hoverformat"] == ",.4~r"
    stacked = panel_figure("stacked", phases([1, 1, 1], [2, 2, 2], [3, 3, 3]), unit="s").figure
    assert {t["hovertemplate"] for t in stacked["data"]} == {
        "%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{y:,.4~r} s"
    }


def test_hover_text_escapes_the_unit_for_plotly() -> None:
    series = ResultSeries({}, T, (1.0, 2.0, 3.0))
    (trace,) = line_figure({"x": QueryResult("ok", (series,))}, unit="<b>MiB</b>")["data"]
    assert trace["hovertemplate"].endswith(" &lt;b&gt;MiB&lt;/b&gt;")


def test_codes_are_steps_with_integer_ticks_at_the_codes_seen_only() -> None:
    quiet = ResultSeries({"instance": "a:9400"}, T, (0.0, 0.0, 0.0))
    failing = ResultSeries({"instance": "b:9400"}, T, (0.0, 74.0, None))
    figure = strict_json(
        panel_figure("codes", {"by exporter": QueryResult("ok", (quiet, failing))},
                     unit="XID code").figure
    )  # fmt: skip
    *steps, starts = figure["data"]
    assert [t["y"] for t in steps] == [[0.0, 0.0, 0.0], [0.0, 74.0, None]]
    assert {t["line"]["shape"] for t in steps} == {"hv"}
    assert {t["mode"] for t in steps} == {"lines"}
    assert {t["hovertemplate"] for t in steps} == {"%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{y:d} XID code"}
    # A marker where each code starts: a's 0; b's 0, then its 74.
    assert (starts["mode"], starts["y"]) == ("markers", [0.0, 0.0, 74.0])
    assert starts["text"] == [steps[0]["name"], steps[1]["name"], steps[1]["name"]]
    assert starts["x"] == [steps[0]["x"][0], steps[1]["x"][0], steps[1]["x"][1]]
    assert figure["layout"]["xaxis"]["range"] == [steps[0]["x"][0], steps[0]["x"][-1]]
    yaxis = figure["layout"]["yaxis"]
    assert (yaxis["tickmode"], yaxis["tickvals"], yaxis["ticktext"]) == (
        "array",
        [0, 74],
        ["0", "74"],
    )
    assert (yaxis["tickformat"], yaxis["hoverformat"]) == ("d", "d")
    assert yaxis["range"] == [-0.5, 74.5]


def test_codes_that_are_all_zero_get_one_tick_at_zero_not_a_half() -> None:
    series = ResultSeries({}, T, (0.0, None, 0.0))
    figure = panel_figure("codes", {"x": QueryResult("ok", (series,))}, unit="XID code").figure
    assert figure["layout"]["yaxis"]["tickvals"] == [0]
    assert figure["layout"]["yaxis"]["range"] == [-0.5, 0.5]


# Quantiles from buckets: the stated rule (dashboard.precision), the hover, the log axis.


@pytest.mark.parametrize(
    ("value", "lower", "upper", "wide"),
    [
        (635.2, 160.0, 640.0, True),  # issue 20: 480 s of bucket around a "635.20 s"
        (0.995, 0.5, 1.0, True),
        (10.4, 10.0, 10.5, False),  # 0.5 s at 10.4 s: the value is worth showing
        (0.099, 0.0, 0.1, True),  # the first bucket starts at 0
        (4.0, 3.0, 4.0, False),  # exactly a quarter: not wider than the rule
        (4.0, 3.0, 4.01, True),
        (None, 640.0, None, True),  # past the last edge: a lower bound, never a value
        (0.5, None, None, False),  # not a quantile from buckets: nothing to say
    ],
)
def test_a_quantile_is_shown_as_its_bucket_when_wider_than_the_stated_fraction(
    value: float | None, lower: float | None, upper: float | None, wide: bool
) -> None:
    assert WIDE_BUCKET_FRACTION == 0.25
    assert bucket_is_wide(value, lower, upper) is wide


def quantile(values: Values, lower: Values, upper: Values) -> ResultSeries:
    return ResultSeries({}, T, tuple(values), lower=tuple(lower), upper=tuple(upper))


def test_a_quantile_hover_says_which_bucket_the_value_was_interpolated_in() -> None:
    p99 = quantile((635.2, None, 20.5), (160.0, 640.0, 20.0), (640.0, None, 21.0))
    figure = strict_json(line_figure({"p99": QueryResult("ok", (p99,))}, unit="seconds"))
    line, bound = figure["data"]
    assert line["y"] == [635.2, None, 20.5]
    assert line["customdata"] == [[160.0, 640.0], [640.0, None], [20.0, 21.0]]
    assert line["hovertemplate"] == (
        "%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{y:,.4~r} s, interpolated within "
        "(%{customdata[0]:,.4~r} s, %{customdata[1]:,.4~r} s]"
    )
    assert bound["y"] == [None, 640.0, None]
    assert bound["hovertemplate"] == (
        "%{x|%Y-%m-%d %H:%M:%S} UTC<br>&gt; %{y:,.4~r} s (past the last bucket edge)"
    )
    assert "customdata" not in bound


def test_a_series_that_is_not_a_quantile_has_no_bucket_in_its_hover() -> None:
    mean = ResultSeries({}, T, (1.0, 2.0, 3.0))
    (trace,) = line_figure({"mean": QueryResult("ok", (mean,))}, unit="seconds")["data"]
    assert "customdata" not in trace
    assert trace["hovertemplate"] == "%{x|%Y-%m-%d %H:%M:%S} UTC<br>%{y:,.4~r} seconds"


@pytest.mark.parametrize(
    ("values", "spans"),
    [
        ([0.01, 0.5, 2.0], True),  # 200x
        ([0.05, 5.0], False),  # exactly 100x: two decades, not more
        ([0.05, 5.01], True),
        ([0.0, None, 0.3, 20.0], False),  # zeros and gaps have no place on a log axis
        ([0.0, 0.001, 1.0], True),
        ([3.0], False),
        ([], False),
    ],
)
def test_values_span_more_than_two_decades(values: list[float | None], spans: bool) -> None:
    assert spans_decades(values) is spans


def latency(
    p50: Values, p99: Values, p99_bucket: tuple[Values, Values], unit: str = "seconds"
) -> Drawn:
    results = {
        "p50": QueryResult("ok", (quantile(p50, [0.0] * len(p50), [0.1] * len(p50)),)),
        "p99": QueryResult("ok", (quantile(p99, *p99_bucket),)),
        "mean": QueryResult("ok", (ResultSeries({}, T, (0.05, 0.05, 0.05)),)),
    }
    return panel_figure("line", results, unit=unit)


def test_a_latency_quantile_panel_spanning_more_than_two_decades_opens_on_a_log_axis() -> None:
    figure = strict_json(
        latency((0.05, 0.06, 0.05), (0.1, 600.0, 0.2), ((0, 160, 0), (1, 640, 1))).figure
    )
    assert figure["layout"]["yaxis"]["type"] == "log"
    assert figure["y_scales"] == ["linear", "log"]  # the page offers the toggle


def test_a_lower_bound_past_the_last_edge_counts_towards_the_span() -> None:
    # p99 only known to exceed 640 s: still 4 decades above the p50's 0.05 s.
    drawn = latency((0.05, 0.05, 0.05), (0.1, None, 0.1), ((0, 640, 0), (0.2, None, 0.2)))
    assert drawn.figure["layout"]["yaxis"]["type"] == "log"


def test_a_latency_panel_within_two_decades_stays_linear_with_the_toggle_offered() -> None:
    figure = latency((0.05, 0.06, 0.05), (0.1, 0.3, 0.2), ((0, 0, 0), (1, 1, 1))).figure
    assert "type" not in figure["layout"]["yaxis"]
    assert figure["y_scales"] == ["linear", "log"]


def test_only_latency_quantile_panels_offer_a_log_scale() -> None:
    spread = ResultSeries({}, T, (0.001, 1.0, 1000.0))
    plain = {"mean": QueryResult("ok", (spread,))}
    assert not log_scale_by_default(plain, unit="seconds")  # no buckets: not a quantile
    assert "y_scales" not in panel_figure("line", plain, unit="seconds").figure
    tokens = latency((1, 1, 1), (1e3, 1e3, 1e3), ((0,) * 3, (2e3,) * 3), unit="tokens")
    assert "y_scales" not in tokens.figure
    assert "type" not in tokens.figure["layout"]["yaxis"]


def test_wide_time_axes_name_the_day_and_narrow_ones_the_hour() -> None:
    figure = panel_figure("line", phases([1, 1, 1], [2, 2, 2], [3, 3, 3]), unit="s").figure
    stops = figure["layout"]["xaxis"]["tickformatstops"]
    two_hours, day = 2 * 3600 * 1000, 24 * 3600 * 1000
    assert [(s["dtickrange"], s["value"]) for s in stops] == [
        ([None, two_hours], "%H:%M"),
        ([two_hours, day - 1], "%d %b %H:%M"),  # a 24 h view's 3-hourly ticks cross midnight
        ([day, None], "%d %b"),  # a 3-day view: never "00:00 00:00 00:00"
    ]
