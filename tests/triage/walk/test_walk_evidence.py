"""Missing evidence: the walk abstains on the leaf that needs it and names nothing else;
the JSON contract; the thresholds it shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.triage.walk.scenario_walks import history_of, walk_history
from triage.walk import LEAVES


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback")
@pytest.mark.parametrize(
    ("scenario", "leaf", "hidden"),
    [
        (
            "kv-pressure",
            "ttft.queue.kv_capacity",
            ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        ),
        ("gpu-throttle", "tpot.straggler.gpu_throttle", ("DCGM_FI_DEV_SM_CLOCK",)),
        ("tokenizer-saturation", "ttft.frontend", ("process_cpu_seconds_total",)),
    ],
)
def test_a_leaf_without_its_metric_says_insufficient_and_nothing_else_is_supported(
    scenario: str, leaf: str, hidden: tuple[str, ...], tmp_path: Path
) -> None:
    walk = walk_history(history_of(scenario, seed=0), tmp_path, hide=hidden)
    node = walk.node(leaf)
    assert node.verdict == "insufficient"
    assert any(hidden[0].split("_")[0] in m or leaf.split(".")[-1] in m for m in node.missing) or (
        node.missing
    ), node.reason
    assert walk.supported == ()


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback")
def test_the_json_contract_names_every_node_its_verdict_numbers_and_the_canary(
    tmp_path: Path,
) -> None:
    walk = walk_history(history_of("gpu-throttle", seed=1), tmp_path)
    found = json.loads(json.dumps(walk.to_dict(), allow_nan=False))
    assert found["contract"] == 1
    assert found["side"] == "tpot"
    assert found["supported"] == ["tpot.straggler.gpu_throttle"]
    assert {n["id"] for n in found["nodes"] if n["leaf"]} == set(LEAVES)
    leaf = next(n for n in found["nodes"] if n["id"] == "tpot.straggler.gpu_throttle")
    assert leaf["runbook"] == "tpot-straggler-gpu_throttle"
    clock = next(f for f in leaf["figures"] if f["name"] == "sm_clock")
    assert clock["value"] < clock["baseline"]
    assert "DCGM_FI_DEV_SM_CLOCK" in clock["source"] and "local" in clock["source"]
    assert found["canary"]["applied"] is False
    assert found["canary"]["leaf"] == "tpot.straggler.gpu_throttle"
    assert found["canary"]["sample"]["requests"] > 0
    assert {t["key"] for t in found["thresholds"]} >= {"itl_outlier", "sm_clock_drop"}
