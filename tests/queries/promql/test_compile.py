"""The PromQL each spec compiles to, and the escaping that keeps user values inside quotes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from inventory.catalog import MetricType
from queries import FractionBelow, Gauge, Increase, Mean, Quantile, Rate, Ratio, Window
from queries.plan import NameGroup, Plan, ResolvedKey
from queries.promql.compile import compile_plan
from queries.promql.text import duration, le_spellings, matcher, selector, string_literal
from queries.spec import Spec

T0 = datetime(2026, 3, 1, tzinfo=UTC)
NAMES: dict[str, tuple[str, MetricType]] = {
    "generation_tokens": ("vllm:generation_tokens_total", "counter"),
    "request_success": ("vllm:request_success_total", "counter"),
    "ttft": ("vllm:time_to_first_token_seconds", "histogram"),
    "kv_usage": ("vllm:kv_cache_usage_perc", "gauge"),
}
SEL = 'instance=~"10\\\\.0\\\\.0\\\\.1:8000|10\\\\.0\\\\.0\\\\.2:8000"'


def compiled(spec: Spec, model_name: str | None = None) -> str:
    keys = {}
    for key in _keys(spec):
        name, type_ = NAMES[key]
        group = NameGroup(name, (1, 2), ("10.0.0.1:8000", "10.0.0.2:8000"), False)
        keys[key] = ResolvedKey(
            key, type_, (group,), (0.25, 0.5, 1.0), f"{key}: uses {name}", False
        )
    window = Window(T0, T0 + timedelta(hours=1), 60)
    return compile_plan(Plan(spec, window, model_name, keys, ())).promql


def _keys(spec: Spec) -> list[str]:
    if isinstance(spec, Ratio):
        return _keys(spec.numerator) + _keys(spec.denominator)
    return [spec.key]


def test_rate_sums_a_counter_rate_by_the_requested_labels() -> None:
    assert compiled(Rate("generation_tokens", by=("model_name",), window_seconds=60)) == (
        f"sum by (model_name) (rate(vllm:generation_tokens_total{{{SEL}}}[60s]))"
    )


def test_increase_without_grouping_is_one_plain_sum() -> None:
    assert compiled(Increase("generation_tokens", window_seconds=3600)) == (
        f"sum(increase(vllm:generation_tokens_total{{{SEL}}}[3600s]))"
    )


def test_the_scope_model_and_match_values_become_escaped_equality_matchers() -> None:
    spec = Rate("request_success", match={"finished_reason": "abort"}, window_seconds=90.5)
    assert compiled(spec, model_name="llama-3") == (
        f'sum(rate(vllm:request_success_total{{{SEL},model_name="llama-3",'
        f'finished_reason="abort"}}[90500ms]))'
    )


def test_a_quantile_asks_for_the_bucket_rates_by_le_and_the_requested_labels() -> None:
    # The quantile and its bucket are computed from these, as the local backend does.
    assert compiled(Quantile("ttft", 0.95, by=("model_name",))) == (
        f"sum by (le, model_name) (rate(vllm:time_to_first_token_seconds_bucket{{{SEL}}}[300s]))"
    )


def test_a_key_read_under_two_names_joins_each_names_endpoints_with_or() -> None:
    new = NameGroup("vllm:kv_cache_usage_perc", (1,), ("10.0.0.1:8000",), False)
    old = NameGroup("vllm:gpu_cache_usage_perc", (2,), ("10.0.0.2:8000",), True)
    key = ResolvedKey("kv_usage", "gauge", (new, old), (), "kv_usage: two names", True)
    window = Window(T0, T0 + timedelta(hours=1), 60)
    plan = Plan(Gauge("kv_usage", agg="max", by=("instance",)), window, None, {"kv_usage": key}, ())
    assert compile_plan(plan).promql == (
        "max by (instance) ("
        'vllm:kv_cache_usage_perc{instance=~"10\\\\.0\\\\.0\\\\.1:8000"} or '
        'vllm:gpu_cache_usage_perc{instance=~"10\\\\.0\\\\.0\\\\.2:8000"})'
    )


def test_mean_divides_the_rate_of_sum_by_the_rate_of_count() -> None:
    assert compiled(Mean("ttft", window_seconds=60)) == (
        f"sum(rate(vllm:time_to_first_token_seconds_sum{{{SEL}}}[60s])) / "
        f"sum(rate(vllm:time_to_first_token_seconds_count{{{SEL}}}[60s]))"
    )


def test_fraction_below_matches_both_spellings_of_the_edge() -> None:
    assert compiled(FractionBelow("ttft", 1, window_seconds=60)) == (
        f'sum(rate(vllm:time_to_first_token_seconds_bucket{{{SEL},le=~"1|1\\\\.0"}}[60s])) / '
        f"sum(rate(vllm:time_to_first_token_seconds_count{{{SEL}}}[60s]))"
    )


def test_fraction_below_a_non_edge_asks_for_both_bracketing_edges_labelled_by_bound() -> None:
    text = compiled(FractionBelow("ttft", 0.3, window_seconds=60))
    lower, upper = text.split(" or ")
    assert lower.startswith("label_replace(sum(rate(") and '"bound", "lower", "", "")' in lower
    assert 'le=~"0\\\\.25"' in lower and 'le=~"0\\\\.5"' in upper
    assert '"bound", "upper", "", "")' in upper


def test_gauges_aggregate_the_instant_value() -> None:
    assert compiled(Gauge("kv_usage", agg="avg", by=("instance",))) == (
        f"avg by (instance) (vllm:kv_cache_usage_perc{{{SEL}}})"
    )


def test_a_ratio_parenthesises_both_sides() -> None:
    spec = Ratio(
        Rate("request_success", match={"finished_reason": "abort"}, window_seconds=60),
        Rate("request_success", window_seconds=60),
    )
    assert compiled(spec) == (
        f'(sum(rate(vllm:request_success_total{{{SEL},finished_reason="abort"}}[60s]))) / '
        f"(sum(rate(vllm:request_success_total{{{SEL}}}[60s])))"
    )


def test_a_selector_escape_attempt_stays_inside_its_string() -> None:
    hostile = '"} or up{x="'
    assert string_literal(hostile) == '"\\"} or up{x=\\""'
    assert matcher("model_name", "=", hostile) == 'model_name="\\"} or up{x=\\""'
    assert string_literal("a\\b\nc\x00") == '"a\\\\b\\nc\\u0000"'


def test_label_and_metric_names_outside_the_grammar_are_refused_or_quoted() -> None:
    with pytest.raises(ValueError, match="not a Prometheus label name"):
        matcher('x="1"} or up{y', "=", "v")
    with pytest.raises(ValueError, match="not a label matcher"):
        matcher("x", "==", "v")
    assert selector("weird-name", []) == '{__name__="weird-name"}'


def test_bucket_edges_have_every_exporter_spelling() -> None:
    assert le_spellings(1.0) == ("1", "1.0")
    assert le_spellings(0.005) == ("0.005",)
    assert le_spellings(1e6) == ("1000000", "1000000.0", "1e+06")
    assert le_spellings(float("inf")) == ("+Inf", "inf")


def test_durations_are_whole_seconds_or_milliseconds() -> None:
    assert (duration(60), duration(1.5)) == ("60s", "1500ms")
    with pytest.raises(ValueError):
        duration(0)


def test_specs_refuse_unknown_keys_wrong_types_and_unsafe_groupings() -> None:
    with pytest.raises(ValueError, match="unknown catalog key"):
        Rate("no_such_key")
    with pytest.raises(ValueError, match="is a gauge"):
        Rate("kv_usage")
    with pytest.raises(ValueError, match="cannot group by"):
        Gauge("kv_usage", by=("pod",))
    with pytest.raises(ValueError, match="not a label name"):
        Rate("request_success", match={"bad-label": "x"})
    with pytest.raises(ValueError, match="same labels"):
        Ratio(Rate("request_success", by=("model_name",)), Rate("request_success"))


def test_windows_are_utc_aware_and_widen_their_step_past_11000_points() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        naive = datetime.fromisoformat("2026-01-01T00:00:00")
        Window(naive, naive, 1)
    day = Window(T0, T0 + timedelta(days=1), 1)
    assert day.points == 86_401
    bounded = day.bounded()
    assert bounded.points <= 11_000 and bounded.step_seconds == 7.856
    assert Window(T0, T0 + timedelta(hours=1), 15).bounded().step_seconds == 15
