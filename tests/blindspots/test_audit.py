"""The audit's orchestration on fleets recorded by fleetsim: an item's verdict is its worst
selector's, with why, since when (from the inventory history), the replicas named and the
rewrite; a parse error is that item's error and the rest still runs."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from blindspots.audit import AuditReport, ItemResult, audit_items, item_key
from blindspots.sources import items_from_paths
from blindspots.types import VERDICT_ORDER, Item
from inventory.models import Fleet
from tests.blindspots.audit_fleets import (
    DASHBOARD,
    REPLICAS,
    RULES,
    SCALEDOBJECT,
    SKEW_AT,
    START,
    skewed_fleet,
    steady_fleet,
)

pytestmark = pytest.mark.django_db


def audited(fleet: Fleet, *extra: Item) -> AuditReport:
    items, errors = items_from_paths([RULES, DASHBOARD, SCALEDOBJECT])
    return audit_items(fleet, [*items, *extra], errors, inputs=["fixtures"])


def row(report: AuditReport, name: str, where: str = "") -> ItemResult:
    (found,) = [r for r in report.items if r.item.name == name and where in r.item.where]
    return found


@pytest.fixture
def steady(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return steady_fleet(tmp_path_factory)


@pytest.fixture
def skewed(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return skewed_fleet(tmp_path_factory)


def test_a_renamed_metric_is_blind_with_the_rename_as_why_and_a_dialect_proof_rewrite(
    steady: Fleet,
) -> None:
    report = audited(steady)
    rule = row(report, "KvCacheAlmostFull")
    assert rule.verdict == "blind"
    assert "vllm:kv_cache_usage_perc" in rule.why and "renamed" in rule.why
    assert rule.matching == () and set(rule.missing) == set(REPLICAS[:2])
    assert rule.rewrite is not None
    assert rule.rewrite.before == "vllm:gpu_cache_usage_perc > 0.9"
    assert "vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc" in rule.rewrite.after
    assert "-vllm:gpu_cache_usage_perc > 0.9" in rule.rewrite.diff
    # The same metric in an autoscaler's second trigger: blind too, named by its trigger.
    scaler = row(report, "vllm-chat", "trigger 2")
    assert scaler.item.kind == "autoscaler" and scaler.verdict == "blind"


def test_a_metric_only_some_replicas_expose_is_partly_blind_naming_them_since_the_rollback(
    skewed: Fleet,
) -> None:
    report = audited(skewed)
    rule = row(report, "QueueByReason")
    assert rule.verdict == "partly blind"
    assert rule.missing == (REPLICAS[0],)
    assert set(rule.matching) == set(REPLICAS[1:])
    # Since when comes from what FleetScope saw: the scrape the rolled-back replica first
    # lacked the family, a few steps after the rollback began.
    assert rule.since is not None
    rollback = START + timedelta(seconds=SKEW_AT)
    assert rollback <= rule.since <= rollback + timedelta(minutes=5), rule.since
    assert rule.since_text
    as_dict = rule.to_dict()
    assert as_dict["since"] == rule.since.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert as_dict["missing"] == [REPLICAS[0]]
    # The same family is live on the steady fleet, which never changed dialect.


def test_an_le_written_as_one_spelling_gets_a_matcher_for_both(steady: Fleet) -> None:
    rule = row(audited(steady), "SlowFirstTokens")
    assert rule.verdict != "live"
    assert rule.rewrite is not None
    assert 'le=~"2|2\\\\.0"' in rule.rewrite.after
    assert any("2.0" in note for note in rule.rewrite.notes)


def test_template_variables_are_substituted_and_panels_in_collapsed_rows_are_read(
    steady: Fleet,
) -> None:
    report = audited(steady)
    # `$quantile` (custom values) and `$__rate_interval` inside a collapsed row: live.
    ttft = row(report, "TTFT p$quantile")
    assert "row Latency" in ttft.item.where
    assert ttft.verdict == "live"
    assert ttft.selectors[0].selector.needs_le
    # `$instance` is "All": a wildcard matcher from the variable.
    kv = row(report, "KV cache usage (old name)")
    matchers = {m.label: m for m in kv.selectors[0].selector.matchers}
    assert matchers["instance"].from_variable and matchers["instance"].op == "=~"
    assert kv.verdict == "blind"
    # A title with markup is kept as written (the page escapes it).
    assert row(report, "<script>alert('panel')</script>").item.where.startswith(
        "dashboard vLLM serving > row Latency"
    )


def test_live_rules_are_live_including_one_reading_a_recording_rule(steady: Fleet) -> None:
    report = audited(steady)
    assert row(report, "KvCacheAlmostFullNow").verdict == "live"
    assert row(report, "QueueByReason").verdict == "live"
    recorded = row(report, "FleetBusy")
    assert recorded.verdict == "live" and "recorded by a rule" in recorded.why
    assert recorded.missing == ()  # no endpoint is expected to expose a recorded series
    assert row(report, "Requests running").verdict == "live"


def test_a_parse_error_is_reported_per_item_and_the_rest_still_runs(steady: Fleet) -> None:
    broken = Item("rule", "Hand-written", "test, rule 1", "sum(rate(vllm:num_requests_running[5m]")
    report = audited(steady, broken)
    errors = {(e.name, e.where): e for e in report.errors}
    assert "unclosed" in errors[("BrokenRule", "group vllm-latency, rule 2")].reason
    assert "unclosed" in errors[("Hand-written", "test, rule 1")].reason
    assert errors[("Engine logs", next(w for n, w in errors if n == "Engine logs"))].reason
    assert "BrokenRule" not in {r.item.name for r in report.items}
    assert report.counts["errors"] == len(report.errors) == 4
    assert sum(report.counts[v] for v in VERDICT_ORDER) == len(report.items)


def test_the_worst_selector_decides_and_an_expression_without_series_is_live(
    steady: Fleet,
) -> None:
    mixed = Item(
        "rule",
        "Mixed",
        "test, rule 1",
        "vllm:num_requests_running / on() vllm:gpu_cache_usage_perc",
    )
    constant = Item("rule", "Constant", "test, rule 2", "vector(1)")
    report = audit_items(steady, [mixed, constant])
    first, second = report.items
    assert [v.verdict for v in first.selectors] == ["live", "blind"]
    assert first.verdict == "blind" and "renamed" in first.why
    assert second.verdict == "live" and second.selectors == () and second.rewrite is None
    assert item_key(mixed) != item_key(constant)


def test_the_report_is_json_with_counts_worst_first(steady: Fleet) -> None:
    report = audited(steady)
    data = json.loads(json.dumps(report.to_dict()))
    assert list(data["counts"]) == [*VERDICT_ORDER, "errors"]
    assert data["fleet"] == "steady" and data["inputs"] == ["fixtures"]
    assert data["started"].endswith("Z")
    blind = [i for i in data["items"] if i["verdict"] == "blind"]
    assert blind and all(i["rewrite"] is None or i["rewrite"]["diff"] for i in blind)
    assert report.actionable == data["counts"]["blind"] + data["counts"]["partly blind"]
