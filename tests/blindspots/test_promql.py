"""Vector selectors out of PromQL: nested functions, `__name__` regexes, matchers as
written, template variables, and parse errors with their position."""

from __future__ import annotations

import pytest

from blindspots.promql import PromqlError, parse_selectors, substitute_variables
from blindspots.types import Matcher

P99 = (
    "histogram_quantile(0.99, sum by (le) (rate("
    'vllm:e2e_request_latency_seconds_bucket{model_name="$model"}[$__rate_interval])))'
)


def test_a_nested_selector_lists_its_functions_innermost_first() -> None:
    [selector] = parse_selectors(P99, {"model": ("llama",)})
    assert selector.metric == "vllm:e2e_request_latency_seconds_bucket"
    assert selector.functions == ("rate", "sum", "histogram_quantile")
    assert selector.needs_le
    assert selector.matchers == (Matcher("model_name", "=", "llama", from_variable=True),)
    assert selector.text == 'vllm:e2e_request_latency_seconds_bucket{model_name="$model"}'


def test_every_selector_of_a_binary_expression_is_found_in_order() -> None:
    expr = (
        'sum(rate(vllm:request_success_total{finished_reason="stop"}[5m] offset 1h)) '
        "/ on() group_left sum(rate(vllm:request_success_total[5m] @ end())) > bool 0.5"
    )
    first, second = parse_selectors(expr)
    assert first.text == 'vllm:request_success_total{finished_reason="stop"}'
    assert second.text == "vllm:request_success_total"
    assert first.functions == second.functions == ("rate", "sum")
    assert second.matchers == ()


def test_subqueries_aggregation_parameters_and_unary_minus_are_walked() -> None:
    expr = '-max_over_time(topk(3, rate(a[5m]))[1h:1m]) + count_values("v", b) + (c)'
    selectors = parse_selectors(expr)
    assert [s.metric for s in selectors] == ["a", "b", "c"]
    assert selectors[0].functions == ("rate", "topk", "max_over_time")
    assert selectors[1].functions == ("count_values",)
    assert selectors[2].functions == ()


def test_a_name_regex_is_a_matcher_and_leaves_the_metric_unnamed() -> None:
    [selector] = parse_selectors('sum({__name__=~"vllm:num_requests_.*", job="vllm"})')
    assert selector.metric is None
    assert selector.matchers == (
        Matcher("__name__", "=~", "vllm:num_requests_.*"),
        Matcher("job", "=", "vllm"),
    )
    assert selector.text == '{__name__=~"vllm:num_requests_.*", job="vllm"}'


def test_a_name_given_by_an_equality_matcher_is_the_metric() -> None:
    [selector] = parse_selectors('{__name__="vllm:num_requests_running"}')
    assert selector.metric == "vllm:num_requests_running"


def test_an_le_matcher_is_kept_exactly_as_written() -> None:
    [bucket, count] = parse_selectors(
        'sum(rate(x_bucket{le="2"}[5m])) / sum(rate(x_bucket{le="2.0"}[5m]))'
    )
    assert bucket.matchers == (Matcher("le", "=", "2"),)
    assert count.matchers == (Matcher("le", "=", "2.0"),)


def test_each_alternative_of_an_or_selector_is_its_own_selector() -> None:
    first, second = parse_selectors('foo{a="x" or b="y"}')
    assert first.matchers == (Matcher("a", "=", "x"),)
    assert second.matchers == (Matcher("b", "=", "y"),)
    assert first.text == second.text == 'foo{a="x" or b="y"}'


def test_a_single_valued_variable_is_substituted_as_its_value() -> None:
    [selector] = parse_selectors('x{model_name="$model"}', {"model": ("llama",)})
    assert selector.matchers == (Matcher("model_name", "=", "llama", from_variable=True),)


def test_a_multi_valued_variable_becomes_an_alternation_and_the_op_a_regex() -> None:
    variables = {"model": ("llama", "mistral.7b")}
    for written in ("$model", "${model}", "${model:regex}", "[[model]]"):
        [selector] = parse_selectors(f'x{{model_name="{written}"}}', variables)
        assert selector.matchers == (
            Matcher("model_name", "=~", "(llama|mistral\\.7b)", from_variable=True),
        ), written
    [piped] = parse_selectors('x{model_name=~"${model:pipe}"}', variables)
    assert piped.matchers[0].value == "llama|mistral.7b"
    [negated] = parse_selectors('x{model_name!="$model"}', variables)
    assert negated.matchers[0].op == "!~"


@pytest.mark.parametrize("values", [("All",), ("$__all",), ()])
def test_all_or_no_values_means_any_value(values: tuple[str, ...]) -> None:
    [selector] = parse_selectors('x{instance="$instance"}', {"instance": values})
    assert selector.matchers == (Matcher("instance", "=~", ".*", from_variable=True),)


def test_an_unknown_variable_is_a_wildcard() -> None:
    [selector] = parse_selectors('x{instance=~"$nobody_knows"}')
    assert selector.matchers == (Matcher("instance", "=~", ".*", from_variable=True),)


def test_a_variable_inside_a_longer_value_keeps_the_rest_escaped() -> None:
    [selector] = parse_selectors('x{pod="engine-$n.1"}', {"n": ("a", "b")})
    assert selector.matchers[0] == Matcher("pod", "=~", "engine-(a|b)\\.1", from_variable=True)


def test_a_variable_in_the_metric_name_becomes_a_name_matcher() -> None:
    variables = {"metric": ("vllm:num_requests_running", "vllm:num_requests_waiting")}
    [selector] = parse_selectors('sum(${metric}{model_name="llama"})', variables)
    assert selector.metric is None
    assert selector.matchers[0] == Matcher(
        "__name__", "=~", "(vllm:num_requests_running|vllm:num_requests_waiting)", True
    )
    assert selector.text == '${metric}{model_name="llama"}'
    [prefixed] = parse_selectors("rate(vllm:${kind}_total[5m])", {"kind": ("request_success",)})
    assert prefixed.metric == "vllm:request_success_total"
    [unknown] = parse_selectors("$metric")
    assert unknown.metric is None
    assert unknown.matchers == (Matcher("__name__", "=~", ".*", from_variable=True),)


def test_interval_and_numeric_variables_become_durations_and_numbers() -> None:
    expr = (
        "histogram_quantile($q, rate(x[$__rate_interval])) + rate(y[${__interval}]) "
        "+ rate(z[$window] offset $shift) > $__range_s"
    )
    text = substitute_variables(expr, {"q": ("0.99",), "window": ("10m",)})
    assert text == (
        "histogram_quantile(0.99, rate(x[5m])) + rate(y[5m]) + rate(z[10m] offset 5m) > 300"
    )
    assert [s.metric for s in parse_selectors(expr, {"q": ("0.99",)})] == ["x", "y", "z"]


def test_a_variable_in_a_grouping_is_not_a_selector() -> None:
    [selector] = parse_selectors("sum by ($group) (x)", {"group": ("model_name",)})
    assert selector.metric == "x"


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("sum(rate(x[5m])", "unclosed left parenthesis at line 1, column 4"),
        ("rate(foo[5m)", "at line 1, column 12 (near ')')"),
        ("foo bar", "at line 1, column 5 (near 'bar')"),
        ('foo{a="b"} +', "at line 1, column 13 (at end of input)"),
        ("nofunc(x)", "unknown function with name 'nofunc' at line 1, column 1"),
        ('up{job="a}', "unterminated quoted string"),
        ("sum(x)\n  / * 3", "at line 2, column 5 (near '*')"),
    ],
)
def test_a_parse_error_names_the_parser_message_and_position(expr: str, reason: str) -> None:
    with pytest.raises(PromqlError) as raised:
        parse_selectors(expr)
    assert reason in raised.value.reason
    assert isinstance(raised.value, ValueError)


def test_an_empty_expression_is_an_error() -> None:
    with pytest.raises(PromqlError, match="empty expression"):
        parse_selectors("  ")


def test_a_long_chain_of_binary_operators_does_not_recurse_too_deep() -> None:
    expr = " + ".join(f"m{i}" for i in range(1200))
    selectors = parse_selectors(expr)
    assert len(selectors) == 1200
    assert selectors[-1].text == "m1199"
