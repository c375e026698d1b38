"""The exported Prometheus rules: promtool accepts them, and promtool's own rule tests show
they page on a real burn, stay quiet on a healthy fleet, on a trickle of bad requests and
across a counter reset, and raise the slow ticket for a low-volume service failing for days.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import CommandError, call_command

from devtools.prometheus import binary
from inventory.models import Fleet
from queries.promql import le_matcher, matcher, selector, string_literal
from slo.rules import BURN_ALERT, SLOW_ALERT, SloRules, slo_rules, slo_rules_yaml
from slo.services import ObjectiveInput, slo_create
from tests.queries.storefill import endpoint_with_scrapes, fleet_named, histogram
from tests.slo.conftest import engine_instances

pytestmark = pytest.mark.django_db

BASE_URL = "https://fleetscope.example.com"
TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
OLD_ITL = "vllm:time_per_output_token_seconds"  # ITL's name before vLLM 0.11
E2E = "vllm:e2e_request_latency_seconds"
SUCCESS = "vllm:request_success_total"
TTFT_EDGES = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0)
TOKEN_EDGES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
HISTOGRAMS = (TTFT, ITL, OLD_ITL, E2E)
TYPES = {**dict.fromkeys(HISTOGRAMS, "histogram"), "vllm:request_success": "counter"}


def replica(fleet: Fleet, instance: str, *, itl: str = ITL, e2e_le: str = "1.0") -> None:
    """One hand-made replica's inventory: TTFT, ITL under `itl`, and E2E with its 1 s edge
    spelled `e2e_le`."""
    m = {"model_name": "llama"}
    samples = histogram(TTFT, m, {**{repr(e): 1.0 for e in TTFT_EDGES}, "+Inf": 1.0})
    samples += histogram(itl, m, {**{repr(e): 1.0 for e in TOKEN_EDGES}, "+Inf": 1.0})
    samples += histogram(E2E, m, {"0.5": 1.0, e2e_le: 1.0, "+Inf": 1.0})
    samples += [(SUCCESS, {**m, "finished_reason": r}, 1.0) for r in ("stop", "abort")]
    endpoint_with_scrapes(fleet, instance, [(0.0, samples)], types=TYPES)


def mixed_fleet() -> Fleet:
    """Mid-upgrade: new:1 and new:2 expose ITL under its current name, old:1 the old one."""
    fleet = fleet_named("mixed")
    for instance in ("new:1", "new:2"):
        replica(fleet, instance)
    replica(fleet, "old:1", itl=OLD_ITL)
    return fleet


def objective(kind: str, threshold: float | None = None, target: float = 0.99) -> ObjectiveInput:
    return ObjectiveInput(kind, threshold, target)


def promtool(*args: str | Path) -> None:
    done = subprocess.run([binary("promtool"), *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def checked(tmp_path: Path, rules: SloRules) -> dict[str, Any]:
    """The rules written to a file that `promtool check rules` passes, read back."""
    path = tmp_path / "rules.yml"
    path.write_text(rules.yaml())
    promtool("check", "rules", path)
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def exprs(rules: SloRules, record: str) -> list[str]:
    return [r["expr"] for g in rules.groups for r in g["rules"] if r.get("record") == record]


def test_rules_for_a_simulated_fleet_pass_promtool(fleet: Fleet, tmp_path: Path) -> None:
    slo_create(
        fleet=fleet, name="Chat", objectives=[objective("ttft", 0.25), objective("e2e", 3.3)]
    )
    slo_create(fleet=fleet, name="Batch", objectives=[objective("success")], runbook_url=BASE_URL)
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    loaded = checked(tmp_path, rules)
    assert [g["name"] for g in loaded["groups"]] == [
        "fleetscope-slo-prod-batch",
        "fleetscope-slo-prod-chat",
    ]
    batch = loaded["groups"][0]["rules"]
    assert {r["record"] for r in batch if "record" in r} >= {
        "fleetscope_slo:bad_ratio:rate5m", "fleetscope_slo:events:increase3d",
    }  # fmt: skip
    alert = next(r for r in batch if r.get("alert") == BURN_ALERT)
    assert alert["labels"] == {"severity": "page", "burn_window": "1h/5m"}
    assert alert["annotations"]["runbook_url"] == BASE_URL
    assert alert["annotations"]["dashboard_url"] == f"{BASE_URL}/slos/prod/batch/"
    assert 'finished_reason=~"abort|error"' in batch[0]["expr"]
    chat_alerts = [r for r in loaded["groups"][1]["rules"] if "alert" in r]
    noted = {
        'objective="e2e"' in r["expr"]
        for r in chat_alerts
        if "fleetscope_edge_note" in r["annotations"]
    }
    assert noted == {True}  # 3.3 s lies between edges; 0.25 s is one


def test_a_fleet_mid_upgrade_reads_each_name_on_its_own_replicas(tmp_path: Path) -> None:
    fleet = mixed_fleet()
    slo_create(
        fleet=fleet, name="Chat", model_name="llama",
        objectives=[objective("itl", 0.05), objective("ttft", 0.3), objective("success")],
    )  # fmt: skip
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    checked(tmp_path, rules)
    itl, _, _ = exprs(rules, "fleetscope_slo:bad_ratio:rate1h")
    model = matcher("model_name", "=", "llama")
    assert f'{ITL}_bucket{{instance=~"new:1|new:2",{model},{le_matcher(0.05)}}}[3600s])' in itl
    assert f'or rate({OLD_ITL}_bucket{{instance=~"old:1",{model},' in itl
    assert any("read under 2 names" in note for note in rules.notes), rules.notes


def test_an_slo_over_some_replicas_reads_only_those() -> None:
    fleet = mixed_fleet()
    slo_create(fleet=fleet, name="Canary", instances=["old:1"], objectives=[objective("itl", 0.05)])
    [ratio] = exprs(
        slo_rules(fleet, dashboard_base_url=BASE_URL), "fleetscope_slo:bad_ratio:rate1h"
    )
    assert f'{OLD_ITL}_bucket{{instance=~"old:1",' in ratio
    assert ITL not in ratio and "new:" not in ratio


def test_a_fleet_mid_upgrade_pages_on_the_slow_gaps_of_its_old_replica(tmp_path: Path) -> None:
    fleet = mixed_fleet()
    slo_create(fleet=fleet, name="Chat", objectives=[objective("itl", 0.05)])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    # 10 gaps a minute on each replica; only old:1 is slow, 60% of its gaps: 20% of all.
    inputs = []
    for instance, name, good in (("new:1", ITL, 10), ("new:2", ITL, 10), ("old:1", OLD_ITL, 4)):
        inputs += [
            series(f"{name}_bucket", counter([good] * 60), instance=instance, le="0.05"),
            series(f"{name}_count", counter([10] * 60), instance=instance),
        ]
    chat = {"fleet": "mixed", "slo": "chat", "objective": "itl"}
    pages = alerts(rules, BURN_ALERT, "1h/5m", "6h/30m", labels=chat)
    rule_test(tmp_path, rules, inputs, check(12, burn=pages))


def test_a_threshold_between_edges_uses_the_edge_below_and_says_so(tmp_path: Path) -> None:
    fleet = mixed_fleet()
    slo_create(fleet=fleet, name="Chat", objectives=[objective("ttft", 0.3)])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    checked(tmp_path, rules)
    assert all(le_matcher(0.25) in e for e in exprs(rules, "fleetscope_slo:bad_ratio:rate5m"))
    alerts = [r for g in rules.groups for r in g["rules"] if "alert" in r]
    assert len(alerts) == 5
    for alert in alerts:
        note = alert["annotations"]["fleetscope_edge_note"]
        assert "0.3 s is not a bucket edge" in note and "at or under 0.25 s" in note
        assert note in alert["annotations"]["description"]
    assert any("early, never late" in note for note in rules.notes)


def test_a_threshold_under_every_shared_edge_is_left_out_with_a_note() -> None:
    fleet = mixed_fleet()
    slo_create(
        fleet=fleet, name="Chat", objectives=[objective("ttft", 0.0005), objective("success")]
    )
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    assert 'objective="ttft"' not in rules.yaml()
    assert len(exprs(rules, "fleetscope_slo:bad_ratio:rate5m")) == 1  # success's
    assert (
        "mixed/chat: ttft: left out, threshold 0.0005 s lies under the lowest bucket edge "
        "every replica of vllm:time_to_first_token_seconds has (0.001 s): no event can be "
        "counted as good, so no rule could tell a good period from an outage"
    ) in rules.notes


def test_label_values_with_quotes_backslashes_and_braces_are_escaped(tmp_path: Path) -> None:
    fleet = mixed_fleet()
    model = 'org/"odd\\model"} or up{x="'
    slo_create(
        fleet=fleet, name='Chat {{ .Value }} "quoted"', model_name=model,
        objectives=[objective("ttft", 0.25)],
    )  # fmt: skip
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    loaded = checked(tmp_path, rules)
    assert f"model_name={string_literal(model)}" in loaded["groups"][0]["rules"][0]["expr"]
    # Every TTFT of the odd model is slow: the pages fire, their text printed as typed.
    labels = {"instance": "new:1", "model_name": model}
    inputs = [
        series(f"{TTFT}_bucket", counter([0] * 30), le="0.25", **labels),
        series(f"{TTFT}_count", counter([30] * 30), **labels),
    ]
    chat = {"fleet": "mixed", "slo": "chat-value-quoted", "objective": "ttft"}
    pages = alerts(rules, BURN_ALERT, "1h/5m", "6h/30m", labels=chat)
    for page in pages:
        shown = page["exp_annotations"]
        assert shown["summary"].startswith('Chat {{ "{{" }} .Value }} "quoted"')
        page["exp_annotations"] = {k: v.replace('{{ "{{" }}', "{{") for k, v in shown.items()}
    rule_test(tmp_path, rules, inputs, [check(12, burn=pages)[0]])


# promtool's rule unit tests: one sample a minute, counters in expanding notation.


def notation(values: Sequence[float | None]) -> str:
    """Per-minute samples as promtool's expanding notation: `a+bxn` for each run of a
    constant step, `_` for a missing sample."""
    parts: list[str] = []
    i = 0
    while i < len(values):
        first = values[i]
        if first is None:
            parts.append("_")
            i += 1
            continue
        run = [first]
        while i + len(run) < len(values):
            following = values[i + len(run)]
            if following is None or (len(run) > 1 and following - run[-1] != run[1] - run[0]):
                break
            run.append(following)
        step = run[1] - run[0] if len(run) > 1 else 0.0
        parts.append(f"{first:.15g}{'+' if step >= 0 else '-'}{abs(step):.15g}x{len(run) - 1}")
        i += len(run)
    return " ".join(parts)


def counter(per_minute: Sequence[float]) -> list[float | None]:
    return [0.0, *accumulate(per_minute)]


def series(name: str, values: Sequence[float | None], **labels: str) -> dict[str, str]:
    text = selector(name, [matcher(k, "=", v) for k, v in sorted(labels.items())])
    return {"series": text, "values": notation(values)}


def finishes(instances: Sequence[str], good: Sequence[float], bad: Sequence[float]) -> list:
    """`request_success` of each replica: `good` stops and `bad` aborts a minute."""
    return [
        series(SUCCESS, counter(per_minute), instance=instance, finished_reason=reason)
        for instance in instances
        for reason, per_minute in (("stop", good), ("abort", bad))
    ]


BATCH = {"fleet": "prod", "slo": "batch", "objective": "success"}


def alerts(
    rules: SloRules, alert: str, *windows: str, labels: dict[str, str] = BATCH
) -> list[dict[str, Any]]:
    """What promtool should list for `alert` firing in these burn windows, for the objective
    `labels` name."""
    mine = matcher("objective", "=", labels["objective"])
    return [
        {"exp_labels": {**labels, **rule["labels"]}, "exp_annotations": rule["annotations"]}
        for group in rules.groups
        for rule in group["rules"]
        if rule.get("alert") == alert and rule["labels"]["burn_window"] in windows
        and mine in rule["expr"]
    ]  # fmt: skip


def check(minute: int, burn: list | None = None, slow: list | None = None) -> list[dict]:
    return [
        {"eval_time": f"{minute}m", "alertname": BURN_ALERT, "exp_alerts": burn or []},
        {"eval_time": f"{minute}m", "alertname": SLOW_ALERT, "exp_alerts": slow or []},
    ]


def rule_test(
    tmp_path: Path, rules: SloRules, inputs: list, checks: list[dict], exprs: Sequence = (),
    every: str = "1m",
) -> None:  # fmt: skip
    """`every`: how often promtool evaluates the rules (the inputs stay one a minute)."""
    (tmp_path / "rules.yml").write_text(rules.yaml())
    test = {"interval": "1m", "input_series": inputs, "alert_rule_test": checks,
            "promql_expr_test": list(exprs)}  # fmt: skip
    document = {"rule_files": ["rules.yml"], "evaluation_interval": every, "tests": [test]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(document, sort_keys=False))
    promtool("test", "rules", tmp_path / "test.yml")


def value_at(minute: int, record: str, value: float, slo: str, kind: str) -> dict[str, Any]:
    labels = {"fleet": "prod", "slo": slo, "objective": kind}
    shown = selector(record, [matcher(k, "=", v) for k, v in labels.items()])
    return {"expr": shown, "eval_time": f"{minute}m",
            "exp_samples": [{"labels": shown, "value": value}]}  # fmt: skip


def test_a_fleet_failing_a_fifth_of_requests_pages_fast(fleet: Fleet, tmp_path: Path) -> None:
    slo_create(fleet=fleet, name="Batch", objectives=[objective("success")])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    inputs = finishes(engine_instances(fleet), [8] * 60, [2] * 60)
    pages = alerts(rules, BURN_ALERT, "1h/5m", "6h/30m")
    every_pair = alerts(rules, BURN_ALERT, "1h/5m", "6h/30m", "1d/2h", "3d/6h")
    rule_test(tmp_path, rules, inputs, [
        *check(12, burn=pages),  # pages fire first: tickets wait 15m
        *check(40, burn=every_pair, slow=alerts(rules, SLOW_ALERT, "3d")),
    ])  # fmt: skip


def test_a_healthy_fleet_fires_nothing(fleet: Fleet, tmp_path: Path) -> None:
    slo_create(fleet=fleet, name="Batch", objectives=[objective("success")])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    bad = [1 if m % 100 == 50 else 0 for m in range(480)]  # 0.1% of requests
    inputs = finishes(engine_instances(fleet), [10 - b for b in bad], bad)
    rule_test(tmp_path, rules, inputs, [*check(60), *check(240), *check(480)])


def test_three_bad_requests_in_an_hour_neither_page_nor_ticket(
    fleet: Fleet, tmp_path: Path
) -> None:
    slo_create(fleet=fleet, name="Batch", objectives=[objective("success")])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    bad = [1 if m in (10, 30, 50) else 0 for m in range(180)]
    inputs = finishes(engine_instances(fleet)[:1], [0] * 180, bad)
    ratio = value_at(60, "fleetscope_slo:bad_ratio:rate1h", 1.0, "batch", "success")
    rule_test(tmp_path, rules, inputs, [*check(60), *check(70), *check(180)], [ratio])


def test_a_trickle_failing_for_days_raises_the_slow_ticket_and_never_pages(
    fleet: Fleet, tmp_path: Path
) -> None:
    slo_create(fleet=fleet, name="Batch", objectives=[objective("success")])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    minutes = 75 * 60
    # Two requests an hour (one every 30 minutes), nine in ten of them aborted.
    arrivals = {minute: n for n, minute in enumerate(range(15, minutes, 30))}
    bad = [1 if m in arrivals and arrivals[m] % 10 else 0 for m in range(minutes)]
    good = [1 if m in arrivals and not bad[m] else 0 for m in range(minutes)]
    inputs = finishes(engine_instances(fleet)[:1], good, bad)
    slow = alerts(rules, SLOW_ALERT, "3d")
    rule_test(
        tmp_path,
        rules,
        inputs,
        [
            *check(60),
            *check(6 * 60),
            *check(12 * 60, slow=slow),
            *check(48 * 60, slow=slow),
            # After three days, 144 requests: enough for the 3-day pair, which is a ticket too.
            *check(74 * 60, burn=alerts(rules, BURN_ALERT, "3d/6h"), slow=slow),
        ],
        every="5m",  # 75 h of one-minute evaluations took promtool 40 s
    )


def test_a_counter_reset_raises_no_false_alert(fleet: Fleet, tmp_path: Path) -> None:
    slo_create(fleet=fleet, name="Chat", objectives=[objective("ttft", 0.25), objective("success")])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    # The replica restarts at minute 60: two scrapes missed, then every counter from zero.
    requests = [*counter([10] * 60), None, None, *counter([10] * 60)]
    none_bad = [v if v is None else 0.0 for v in requests]
    instance = engine_instances(fleet)[0]
    inputs = [
        series(SUCCESS, requests, instance=instance, finished_reason="stop"),
        series(SUCCESS, none_bad, instance=instance, finished_reason="abort"),
        series(f"{TTFT}_bucket", requests, instance=instance, le="0.25"),
        series(f"{TTFT}_bucket", requests, instance=instance, le="+Inf"),
        series(f"{TTFT}_count", requests, instance=instance),
    ]
    checks = [check(m) for m in (61, 62, 63, 64, 66, 70, 90, 120)]
    ratio = value_at(70, "fleetscope_slo:bad_ratio:rate30m", 0.0, "chat", "ttft")
    rule_test(tmp_path, rules, inputs, [c for pair in checks for c in pair], [ratio])


def test_an_edge_spelled_1_on_one_replica_and_1_0_on_another_counts_both(
    tmp_path: Path,
) -> None:
    fleet = fleet_named("prod")
    replica(fleet, "a:1", e2e_le="1")
    replica(fleet, "b:1", e2e_le="1.0")
    slo_create(fleet=fleet, name="Rag", objectives=[objective("e2e", 1.0)])
    rules = slo_rules(fleet, dashboard_base_url=BASE_URL)
    total = counter([5] * 60)
    inputs = [
        series(name, total, instance=instance, **extra)
        for instance, le in (("a:1", "1"), ("b:1", "1.0"))
        for name, extra in (
            (f"{E2E}_bucket", {"le": le}), (f"{E2E}_bucket", {"le": "+Inf"}), (f"{E2E}_count", {})
        )
    ]  # fmt: skip
    # Had either spelling been missed, half the requests would read as bad.
    ratio = value_at(30, "fleetscope_slo:bad_ratio:rate1h", 0.0, "rag", "e2e")
    rule_test(tmp_path, rules, inputs, check(30), [ratio])


# The command.


def test_the_command_prints_the_rules_and_its_notes(tmp_path: Path) -> None:
    fleet = mixed_fleet()
    slo_create(fleet=fleet, name="Chat", objectives=[objective("ttft", 0.3)])
    out, err = io.StringIO(), io.StringIO()
    call_command("slo_rules", "mixed", "--dashboard-url", BASE_URL, stdout=out, stderr=err)
    assert out.getvalue() == slo_rules_yaml(fleet, dashboard_base_url=BASE_URL)
    assert "not a bucket edge" in err.getvalue()
    call_command("slo_rules", "mixed", "--output", str(tmp_path / "r.yml"), stdout=out, stderr=err)
    assert "http://localhost:8000/slos/mixed/chat/" in (tmp_path / "r.yml").read_text()


def test_the_command_refuses_an_unknown_fleet_or_one_without_slos() -> None:
    mixed_fleet()
    with pytest.raises(CommandError, match="no fleet"):
        call_command("slo_rules", "nowhere")
    with pytest.raises(CommandError, match="no SLO"):
        call_command("slo_rules", "mixed")
