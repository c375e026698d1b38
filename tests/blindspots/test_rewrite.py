"""Rewrites as text: the dialect-proof form of a renamed metric, an le regex accepting
both spellings, and every result parsed again."""

from __future__ import annotations

import promql_parser

from blindspots.rewrite import le_spellings, rewrite_expression
from blindspots.types import Matcher, SelectorVerdict
from tests.blindspots.fleets_b import selector

OLD = "vllm:gpu_cache_usage_perc"
NEW = "vllm:kv_cache_usage_perc"


def renamed(old: str, new: str) -> SelectorVerdict:
    return SelectorVerdict(selector(old), "blind", "", (), (), replacement=new)


def test_an_instant_selector_becomes_new_or_old_with_its_matchers() -> None:
    expr = 'max by (model_name) (vllm:gpu_cache_usage_perc{model_name="m"}) > 0.9'

    rewrite = rewrite_expression(expr, [renamed(OLD, NEW)])

    assert rewrite is not None
    assert rewrite.after == (
        'max by (model_name) ((vllm:kv_cache_usage_perc{model_name="m"} or '
        'vllm:gpu_cache_usage_perc{model_name="m"})) > 0.9'
    )
    assert rewrite.before == expr
    assert "-" + expr in rewrite.diff and "+" + rewrite.after in rewrite.diff
    promql_parser.parse(rewrite.after)


def test_a_range_selector_becomes_the_function_of_each_name_joined_with_or() -> None:
    old, new = (
        "vllm:time_per_output_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
    )
    expr = f"histogram_quantile(0.99, sum by (le) (rate({old}[5m])))"

    rewrite = rewrite_expression(expr, [renamed(old, new)])

    assert rewrite is not None
    assert rewrite.after == (
        f"histogram_quantile(0.99, sum by (le) ((rate({new}[5m]) or rate({old}[5m]))))"
    )
    promql_parser.parse(rewrite.after)


def test_a_bare_range_selector_gets_the_current_name_only_and_says_so() -> None:
    rewrite = rewrite_expression(f"{OLD}[5m]", [renamed(OLD, NEW)])

    assert rewrite is not None
    assert rewrite.after == f"{NEW}[5m]"
    assert any("renamed to" in note and "only" in note for note in rewrite.notes)


def test_names_in_strings_labels_and_longer_names_are_left_alone() -> None:
    expr = f'label_replace({OLD}, "x", "{OLD}", "", "") + {OLD}_extra'

    rewrite = rewrite_expression(expr, [renamed(OLD, NEW)])

    assert rewrite is not None
    assert rewrite.after == (f'label_replace(({NEW} or {OLD}), "x", "{OLD}", "", "") + {OLD}_extra')


def test_an_le_matcher_accepts_both_spellings() -> None:
    bucket = "vllm:e2e_request_latency_seconds_bucket"
    expr = f'sum(rate({bucket}{{le="2"}}[5m])) / sum(rate({bucket}{{le="+Inf"}}[5m]))'
    verdict = SelectorVerdict(selector(bucket, Matcher("le", "=", "2")), "suspicious", "", (), ())

    rewrite = rewrite_expression(expr, [verdict])

    assert rewrite is not None
    assert rewrite.after == (
        f'sum(rate({bucket}{{le=~"2|2\\\\.0"}}[5m])) / sum(rate({bucket}{{le="+Inf"}}[5m]))'
    )
    assert le_spellings("2") == ("2", "2.0")
    assert le_spellings("0.5") == ("0.5",)
    promql_parser.parse(rewrite.after)


def test_nothing_to_rewrite_gives_none() -> None:
    live = SelectorVerdict(selector(NEW), "live", "", (), ())
    assert rewrite_expression(NEW, [live]) is None
