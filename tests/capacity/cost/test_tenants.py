from __future__ import annotations

import math

import pytest

from capacity.cost import (
    KIND_PRECEDENCE,
    UNATTRIBUTED,
    CostInputError,
    TenantRule,
    TenantRuleError,
    UsageRow,
    attribute,
    tenant_rule_check,
)
from tests.capacity.cost.scenario import LLAMA, QWEN, gateway_row, rows, rules


def row(model: str = LLAMA, output_tokens: float = 10, **labels: str) -> UsageRow:
    return UsageRow(model, labels, 1, 0, 5, output_tokens)


def test_each_row_gets_the_tenant_of_its_rule_and_none_is_dropped() -> None:
    found = attribute(rows(), rules())
    assert [r.tenant for r in found.rows] == ["acme", "beta", UNATTRIBUTED, "beta", "gamma"]
    assert found.tenants == ("acme", "beta", "gamma")
    assert found.rows[2].rule is None
    assert any("matched no rule" in note for note in found.notes)


def test_a_regex_pattern_must_match_the_whole_value() -> None:
    rule = TenantRule("acme", "gateway_label", "re:acme-(prod|dev)")
    assert rule.matches(row(tenant="acme-prod"))
    assert not rule.matches(row(tenant="acme-prod-2"))
    assert not rule.matches(row(tenant="xacme-dev"))


def test_an_exact_pattern_is_not_a_regex() -> None:
    assert not TenantRule("acme", "gateway_label", "acme.*").matches(row(tenant="acme-prod"))


def test_a_gateway_label_rule_can_read_another_gateway_label() -> None:
    rule = TenantRule("search", "gateway_label", "search", label="team")
    assert rule.matches(row(team="search"))
    assert not rule.matches(row(tenant="search"))


def test_each_kind_reads_its_own_evidence() -> None:
    usage = row(QWEN, tenant="t", adapter="a-lora", instance="10.0.0.7:8000")
    assert TenantRule("x", "lora_adapter", "a-lora").matches(usage)
    assert TenantRule("x", "model_name", QWEN).matches(usage)
    assert TenantRule("x", "replica", "re:10\\.0\\.0\\.7:\\d+").matches(usage)
    assert not TenantRule("x", "replica", "10.0.0.8:8000").matches(usage)


def test_precedence_is_gateway_label_then_adapter_then_model_then_replica() -> None:
    assert KIND_PRECEDENCE == ("gateway_label", "lora_adapter", "model_name", "replica")
    listed = [  # least specific first, so list order cannot be what decides
        TenantRule("by-replica", "replica", "r1"),
        TenantRule("by-model", "model_name", LLAMA),
        TenantRule("by-adapter", "lora_adapter", "a1"),
        TenantRule("by-label", "gateway_label", "t1"),
    ]
    usage = [
        row(tenant="t1", adapter="a1", instance="r1"),
        row(tenant="other", adapter="a1", instance="r1"),
        row(tenant="other", instance="r1"),
        row(QWEN, instance="r1"),
    ]
    found = attribute(usage, listed)
    assert [r.tenant for r in found.rows] == ["by-label", "by-adapter", "by-model", "by-replica"]


def test_order_then_tenant_name_break_ties_within_a_kind() -> None:
    usage = [row(tenant="acme-prod")]
    by_order = [
        TenantRule("zeta", "gateway_label", "re:acme-.*", order=1),
        TenantRule("alpha", "gateway_label", "re:acme-.*", order=2),
    ]
    assert attribute(usage, by_order).rows[0].tenant == "zeta"
    by_name = [
        TenantRule("zeta", "gateway_label", "re:acme-.*"),
        TenantRule("alpha", "gateway_label", "re:acme-.*"),
    ]
    assert attribute(usage, by_name).rows[0].tenant == "alpha"


def test_overlaps_name_the_rules_the_winner_and_the_tokens_at_stake() -> None:
    listed = [*rules(), TenantRule("beta", "model_name", "re:qwen-.*", order=5)]
    found = attribute(rows(), listed)
    assert len(found.overlaps) == 2
    same, contested = found.overlaps
    assert same.row.labels["tenant"] == "beta" and not same.tenants_differ
    assert contested.winner.tenant == "gamma"
    assert [r.tenant for r in contested.rules] == ["gamma", "beta"]
    assert contested.tenants_differ
    assert contested.output_tokens == 400_000
    text = contested.describe()
    assert "400,000 output tokens" in text and "lora_adapter" in text and "won over" in text
    assert text in found.notes


def test_a_rule_that_matches_nothing_is_reported_by_name() -> None:
    unused = TenantRule("delta", "gateway_label", "delta")
    found = attribute(rows(), [*rules(), unused])
    assert found.unmatched_rules == (unused,)
    assert f"rule {unused.name} matched no usage" in found.notes
    assert unused.name == 'gateway_label tenant="delta" -> delta'


def test_a_rule_that_only_loses_overlaps_still_matched_something() -> None:
    loser = TenantRule("other", "model_name", LLAMA)
    found = attribute([gateway_row(LLAMA, "acme", 5)], [*rules(), loser])
    assert found.unmatched_rules == tuple(r for r in found.rules if r.tenant in ("beta", "gamma"))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"tenant": ""}, "tenant"),
        ({"tenant": "  "}, "tenant"),
        ({"tenant": UNATTRIBUTED}, "tenant"),
        ({"pattern": ""}, "pattern"),
        ({"pattern": "re:"}, "pattern"),
        ({"pattern": "re:acme-(prod"}, "pattern"),
        ({"kind": "namespace"}, "kind"),
        ({"label": ""}, "label"),
        ({"order": "1"}, "order"),
    ],
)
def test_a_rule_that_cannot_be_applied_is_rejected_naming_its_field(
    fields: dict[str, object], field: str
) -> None:
    given: dict[str, object] = {"tenant": "acme", "kind": "gateway_label", "pattern": "acme"}
    given.update(fields)
    with pytest.raises(TenantRuleError) as raised:
        TenantRule(**given)  # type: ignore[arg-type]  # deliberately wrong values
    assert raised.value.field == field


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize(
    "field", ["requests_ok", "requests_failed", "prompt_tokens", "output_tokens"]
)
def test_usage_rows_reject_negative_nan_and_infinite_counts(field: str, value: float) -> None:
    counts = {
        "requests_ok": 1.0,
        "requests_failed": 0.0,
        "prompt_tokens": 1.0,
        "output_tokens": 1.0,
    }
    counts[field] = value
    with pytest.raises(CostInputError) as raised:
        UsageRow(
            LLAMA,
            {"tenant": "acme"},
            counts["requests_ok"],
            counts["requests_failed"],
            counts["prompt_tokens"],
            counts["output_tokens"],
        )
    assert raised.value.field == field
    assert LLAMA in str(raised.value)


def test_a_negative_count_says_a_counter_was_reset() -> None:
    with pytest.raises(CostInputError, match="counter that decreased"):
        row(output_tokens=-3)


def test_usage_rows_need_a_model_and_a_known_source() -> None:
    with pytest.raises(CostInputError) as raised:
        UsageRow("", {}, 1, 0, 1, 1)
    assert raised.value.field == "model_name"
    with pytest.raises(CostInputError) as raised:
        UsageRow(LLAMA, {}, 1, 0, 1, 1, source="router")  # type: ignore[arg-type]  # on purpose
    assert raised.value.field == "source"


def test_the_form_check_builds_the_rule_or_raises_the_same_error() -> None:
    rule = tenant_rule_check(tenant="acme", kind="lora_adapter", label="", pattern="acme-lora")
    assert rule.matches(row(adapter="acme-lora"))
    with pytest.raises(TenantRuleError) as raised:
        tenant_rule_check(tenant="acme", kind="namespace", label="", pattern="x")
    assert raised.value.field == "kind"
