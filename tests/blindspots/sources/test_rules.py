"""Prometheus rules from a rule file, FleetScope's own `slo_rules` export and the rules
API: each rule an item, each unreadable rule or file an error with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from blindspots.sources import RULES_API, rules_from_api, rules_from_yaml
from slo.services import slo_create
from tests.slo.test_rules import mixed_fleet, objective

FIXTURES = Path(__file__).parent.parent / "fixtures"
RULES = FIXTURES / "vllm-rules.yml"


def test_every_rule_of_every_group_is_an_item_with_its_group_and_position() -> None:
    items, _ = rules_from_yaml(RULES.read_text(), str(RULES))
    assert [(i.name, i.where) for i in items] == [
        ("vllm:e2e_latency:p99_5m", "group vllm-latency, rule 1"),
        ("VllmSlowRequests", "group vllm-latency, rule 2"),
        ("VllmKvCacheFull", "group vllm-cache, rule 1"),
        ("VllmAnyRequestsWaiting", "group vllm-cache, rule 2"),
        ("VllmStillFine", "group vllm-broken, rule 2"),
    ]
    assert {i.kind for i in items} == {"rule"}
    assert {i.source for i in items} == {str(RULES)}
    assert items[1].expr.startswith('sum(rate(vllm:e2e_request_latency_seconds_bucket{le="2"}')


def test_bad_promql_a_missing_expr_and_an_empty_group_are_errors_of_their_own() -> None:
    _, errors = rules_from_yaml(RULES.read_text(), str(RULES))
    reasons = {(e.name, e.where): e.reason for e in errors}
    assert reasons[("VllmTypo", "group vllm-broken, rule 1")].startswith(
        "unclosed left parenthesis at line 1, column 4"
    )
    assert reasons[("VllmNoExpr", "group vllm-broken, rule 3")] == "the rule has no `expr`"
    assert reasons[("vllm-empty", "group vllm-empty")] == "the group has no rules"
    assert len(errors) == 3


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("groups: [\n  {name: a, rules: [", "malformed YAML"),
        ("<!DOCTYPE html><html><body>Sign in</body></html>", "an HTML page"),
        ("rules: []", "not a rule file"),
        ("", "empty"),
    ],
)
def test_a_file_that_is_not_a_rule_file_is_one_error(text: str, reason: str) -> None:
    items, errors = rules_from_yaml(text, "bad.yml")
    assert items == []
    [error] = errors
    assert (error.kind, error.where) == ("file", "bad.yml")
    assert reason in error.reason


def test_a_malformed_yaml_error_names_its_line() -> None:
    _, [error] = rules_from_yaml("groups:\n  - name: a\n    rules: [\n", "bad.yml")
    assert "line 4" in error.reason


@pytest.mark.django_db
def test_fleetscopes_own_slo_rules_export_reads_as_rules(tmp_path: Path) -> None:
    fleet = mixed_fleet()
    slo_create(fleet=fleet, name="Chat", objectives=[objective("ttft", 0.25)])
    output = tmp_path / "slo-rules.yml"
    call_command("slo_rules", fleet.slug, output=str(output))
    items, errors = rules_from_yaml(output.read_text(), str(output))
    assert errors == []
    assert items
    assert any(i.name.startswith("fleetscope_slo:") for i in items)
    assert all(i.where.startswith("group fleetscope-slo-") for i in items)


API_ANSWER = {
    "status": "success",
    "data": {
        "groups": [
            {
                "name": "vllm",
                "file": "/etc/prometheus/rules/vllm.yml",
                "rules": [
                    {
                        "name": "VllmKvCacheFull",
                        "query": "max(vllm:gpu_cache_usage_perc) > 0.95",
                        "type": "alerting",
                    },
                    {"name": "vllm:running:sum", "query": "sum(", "type": "recording"},
                    {"name": "NoQuery", "type": "alerting"},
                ],
            },
            {"name": "empty", "file": "x.yml", "rules": []},
        ]
    },
}


def test_the_rules_api_answer_gives_items_and_per_rule_errors() -> None:
    items, errors = rules_from_api(API_ANSWER)
    [item] = items
    assert (item.name, item.where, item.source) == (
        "VllmKvCacheFull",
        "group vllm, rule 1",
        "/etc/prometheus/rules/vllm.yml",
    )
    assert [(e.name, e.where) for e in errors] == [
        ("NoQuery", "group vllm, rule 3"),
        ("empty", "group empty"),
        ("vllm:running:sum", "group vllm, rule 2"),
    ]
    assert "unclosed left parenthesis" in errors[2].reason


def test_the_rules_api_body_is_read_as_json_text_too() -> None:
    items, _ = rules_from_api(json.dumps(API_ANSWER).encode())
    assert [i.name for i in items] == ["VllmKvCacheFull"]


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        ("<html><head><title>502 Bad Gateway</title></head></html>", "an HTML page"),
        ('{"status": "error", "error": "unauthorized"}', "Prometheus answered: unauthorized"),
        ('{"status": "success", "data": {}}', "no `data.groups` list"),
        ("{not json", "malformed JSON"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_rules_api_body_that_is_not_an_answer_is_one_error(
    payload: str | bytes, reason: str
) -> None:
    items, [error] = rules_from_api(payload)
    assert items == []
    assert (error.kind, error.name) == ("file", RULES_API)
    assert reason in error.reason
