"""Canary plans per supported leaf: one knob, one small scope, a sample size a person can
check by hand, gates on SLO, errors and quality, and never applied."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml

from triage.canary import (
    SUPPORTED_LEAVES,
    BreachedObjective,
    CanaryPlan,
    canary_plan,
    sample_size,
)
from triage.walk.types import NodeResult, Verdict

OUTLIER = "10.0.0.7:8000"
ENGINE_FLAGS = (
    "--max-num-seqs",
    "--max-loras",
    "--max-num-batched-tokens",
    "--api-server-count",
    "--gpu-memory-utilization",
)
# The one variable each leaf turns.
VARIABLES = {
    "ttft.queue.load": "replicas",
    "ttft.queue.kv_capacity": "--max-num-seqs",
    "ttft.queue.lora_deferred": "--max-loras",
    "ttft.prefill.long_prompts": "--max-num-batched-tokens",
    "ttft.prefill.cache_miss": "traffic admission after a restart",
    "ttft.frontend": "--api-server-count",
    "tpot.step_work": "--max-num-seqs",
    "tpot.preemption": "--gpu-memory-utilization",
    "tpot.straggler.gpu_throttle": "router membership of the outlier",
    "tpot.collective": "router membership of the TP group",
    "availability.replica_down": "replica",
    "availability.retry_storm": "gateway retries",
    "availability.gateway_errors": "gateway configuration",
    "quality.artifact_regression": "model artifact",
    "inventory.version_skew": "vLLM version",
}
# 5% of requests over the threshold in the incident, 1% allowed.
TTFT = BreachedObjective("ttft", 0.5, 0.99, 0.95, slo="prod/chat")


def node(leaf: str, verdict: Verdict = "supported") -> NodeResult:
    return NodeResult(
        id=leaf, question="?", leaf=True, verdict=verdict, reason="the evidence holds",
        replicas=(OUTLIER,),
    )  # fmt: skip


def plan_for(leaf: str, **given: Any) -> CanaryPlan | None:
    options: dict[str, Any] = {
        "model_name": "llama-3.1-8b-instruct",
        "replicas_in_model": 4,
        "request_rate_per_second": 10.0,
        "breached": TTFT,
        "quality_signal": False,
    } | given
    return canary_plan(leaf, node=node(leaf), **options)


def test_every_simulator_leaf_has_a_plan() -> None:
    assert set(SUPPORTED_LEAVES) == set(VARIABLES)


@pytest.mark.parametrize("leaf", sorted(VARIABLES))
def test_each_leaf_turns_exactly_one_variable_and_is_never_applied(leaf: str) -> None:
    plan = plan_for(leaf)
    assert plan is not None
    found = plan.to_dict()
    assert found["variable"]["name"] == VARIABLES[leaf]
    assert found["applied"] is False and "never applies" in found["notice"]
    assert "never applies" in plan.text
    named = {flag for flag in ENGINE_FLAGS if flag in plan.variable.action}
    assert named <= {VARIABLES[leaf]}, named  # no second engine flag slips into the action
    assert plan.text.count("Change one thing") == 1


@pytest.mark.parametrize("leaf", sorted(set(VARIABLES) - {"availability.replica_down"}))
def test_each_canary_has_a_small_scope_a_sample_and_a_duration(leaf: str) -> None:
    plan = plan_for(leaf)
    assert plan is not None and plan.canary and plan.sample is not None
    assert plan.duration is not None and plan.duration.minutes is not None
    assert plan.scope.share <= 0.25 or plan.scope.kind == "drain"
    assert {g.name for g in plan.success_gates} == {"slo", "errors", "quality"}
    assert {g.name for g in plan.rollback} == {"slo", "errors", "quality"}


def test_the_sample_size_matches_a_hand_calculation() -> None:
    # p0 = 0.05, p1 = 0.01: ((1.6449 x 0.09950 + 0.8416 x 0.21794) / 0.04)^2 = 75.3 -> 76
    by_hand = ((1.6449 * math.sqrt(0.01 * 0.99) + 0.8416 * math.sqrt(0.05 * 0.95)) / 0.04) ** 2
    assert math.ceil(by_hand) == 76
    found = sample_size(TTFT)
    assert found.requests == 76
    assert (found.p0, found.p1) == pytest.approx((0.05, 0.01))
    assert "76 requests" in found.how and "p0" in found.how and "p1" in found.how


def test_the_duration_comes_from_the_canary_share_of_traffic_with_a_ten_minute_floor() -> None:
    busy = plan_for("tpot.step_work", request_rate_per_second=0.1)
    assert busy is not None and busy.duration is not None
    # 76 requests at 0.1 requests/s x 25% = 0.025 requests/s: 3040 s, 51 min
    assert busy.duration.minutes == 51 and busy.duration.within_hour
    quick = plan_for("tpot.step_work", request_rate_per_second=100.0)
    assert quick is not None and quick.duration is not None and quick.duration.minutes == 10


def test_too_little_traffic_to_finish_within_an_hour_is_said() -> None:
    plan = plan_for("tpot.step_work", request_rate_per_second=0.01)
    assert plan is not None and plan.duration is not None
    assert plan.duration.minutes == 507 and not plan.duration.within_hour
    assert "cannot collect its sample within an hour" in plan.duration.how
    assert any("Too little traffic" in flag for flag in plan.red_flags)


def test_an_unknown_request_rate_leaves_the_duration_open_and_says_so() -> None:
    plan = plan_for("tpot.step_work", request_rate_per_second=None)
    assert plan is not None and plan.duration is not None and plan.duration.minutes is None
    assert any("request rate is unknown" in flag for flag in plan.red_flags)


def test_without_a_quality_signal_the_plan_flags_quality_as_unverified() -> None:
    plan = plan_for("quality.artifact_regression", quality_signal=False)
    assert plan is not None and plan.quality_verified is False
    assert plan.to_dict()["quality_verified"] is False
    assert any(flag.startswith("Quality unverified") for flag in plan.red_flags)
    gate = next(g for g in plan.success_gates if g.name == "quality")
    assert gate.rule.startswith("Quality unverified")


def test_with_a_quality_signal_the_prober_gates_success_and_rollback() -> None:
    plan = plan_for("quality.artifact_regression", quality_signal=True)
    assert plan is not None and plan.quality_verified and not plan.red_flags
    assert "prober" in next(g for g in plan.success_gates if g.name == "quality").rule
    assert "regression" in next(g for g in plan.rollback if g.name == "quality").rule


def test_the_rollback_gate_checks_the_percentile_after_half_the_sample() -> None:
    plan = plan_for("ttft.queue.kv_capacity")
    assert plan is not None
    slo = next(g for g in plan.rollback if g.name == "slo")
    assert slo.after_requests == 38 and "2 pp" in slo.rule  # half of (5% - 1%)
    assert "+ 1 pp" in next(g for g in plan.rollback if g.name == "errors").rule


def test_a_knob_vllm_does_not_expose_asks_for_the_deployments_value() -> None:
    plan = plan_for("ttft.queue.kv_capacity")
    assert plan is not None
    assert (plan.variable.current, plan.variable.proposed) == ("256", "192")
    assert "enter the value your deployment uses" in plan.variable.current_note


def test_a_drain_names_the_outlier_replica_the_walk_found() -> None:
    plan = plan_for("tpot.straggler.gpu_throttle")
    assert plan is not None and plan.scope.kind == "drain"
    assert plan.scope.replicas == (OUTLIER,) and OUTLIER in plan.variable.action
    assert any("3 replica(s)" in flag for flag in plan.red_flags)


def test_a_down_replica_is_replaced_by_the_platform_not_canaried() -> None:
    plan = plan_for("availability.replica_down")
    assert plan is not None and plan.canary is False
    assert plan.sample is None and plan.duration is None and not plan.rollback
    assert "platform" in plan.variable.action and "No canary" in plan.text


def test_one_more_replica_is_scaled_from_the_models_replica_count() -> None:
    plan = plan_for("ttft.queue.load", replicas_in_model=3)
    assert plan is not None
    assert (plan.variable.current, plan.variable.proposed) == ("3", "4")
    assert plan.scope.share == pytest.approx(0.25)


def test_an_itl_sample_is_counted_in_requests_not_token_gaps() -> None:
    itl = BreachedObjective("itl", 0.025, 0.97, 0.96)
    plan = plan_for("tpot.step_work", breached=itl)
    assert plan is not None and plan.sample is not None
    assert "counted in requests" in plan.sample.how


@pytest.mark.parametrize(
    ("leaf", "given"),
    [
        ("ttft.unknown", {}),
        ("tpot.step_work", {"breached": None}),
        ("tpot.step_work", {"breached": BreachedObjective("ttft", 0.5, 0.99, 0.995)}),
    ],
    ids=["unsupported-leaf", "no-objective", "objective-met"],
)
def test_no_plan_without_a_supported_leaf_or_a_breach(leaf: str, given: dict[str, Any]) -> None:
    assert plan_for(leaf, **given) is None


def test_no_plan_for_a_leaf_the_walk_ruled_out() -> None:
    found = canary_plan("tpot.step_work", node=node("tpot.step_work", "ruled_out"),
                        model_name=None, replicas_in_model=2, request_rate_per_second=1.0,
                        breached=TTFT, quality_signal=False)  # fmt: skip
    assert found is None


def test_a_node_for_another_leaf_is_refused() -> None:
    with pytest.raises(ValueError, match="not the leaf"):
        canary_plan("tpot.step_work", node=node("tpot.preemption"), model_name=None,
                    replicas_in_model=2, request_rate_per_second=1.0, breached=TTFT,
                    quality_signal=False)  # fmt: skip


@pytest.mark.parametrize("leaf", sorted(VARIABLES))
def test_the_yaml_document_reads_back_as_the_plans_dictionary(leaf: str) -> None:
    plan = plan_for(leaf)
    assert plan is not None
    assert yaml.safe_load(plan.yaml) == {"canary_plan": plan.to_dict()}
    assert "applied: false" in plan.yaml


def test_the_text_is_plain_english_with_the_knob_the_sample_and_the_gates() -> None:
    plan = plan_for("tpot.preemption")
    assert plan is not None
    text = plan.text
    assert "--gpu-memory-utilization: 0.90 -> 0.95" in text
    assert "at least 76 requests" in text and "Duration: 10 minutes." in text
    assert "Success gates" in text and "Roll back if" in text and "Red flags" in text
    assert "\n\n\n" not in text
