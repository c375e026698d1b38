"""Missing evidence: the walk abstains on the leaf that needs it and names nothing else;
the JSON contract; the thresholds it shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slo.models import Objective, Slo
from tests.triage.walk.scenario_walks import history_of, walk_history, walk_window
from triage.walk import LEAVES


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
        ("preemption", "tpot.preemption", ("vllm:num_preemptions_total",)),
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


def _slo_on(model_name: str) -> Slo:
    from inventory.models import Fleet

    fleet = Fleet.objects.get()
    slo = Slo.objects.create(fleet=fleet, slug="chat", name="chat", model_name=model_name)
    Objective.objects.create(slo=slo, kind="ttft", threshold_seconds=2.5, target=0.95)
    return slo


@pytest.mark.django_db
@pytest.mark.usefixtures("loopback")
@pytest.mark.parametrize("scenario", ["kv-pressure", "steady"])
def test_an_slo_decides_the_breach_and_sizes_the_canary(scenario: str, tmp_path: Path) -> None:
    history = history_of(scenario, seed=0)
    walk_history(history, tmp_path)  # loads the fleet; the SLO walk follows
    model = next(r["model_name"] for r in history.manifest["replicas"] if r["index"] == 0)
    slo = _slo_on(model)
    walk = walk_window(slo.fleet, history.manifest, history, slo=slo)
    reading = walk.breach.figures[0]
    assert walk.breach.source == "slo:chat"
    assert reading.name == "slo_ttft_good_share" and (reading.requests or 0) > 100
    if scenario == "steady":
        assert not walk.breach.found and "met" in walk.breach.description
        assert walk.supported == ("healthy",)
        return
    assert walk.breach.found and walk.breach.side == "ttft"
    assert reading.value is not None and reading.value < 0.95
    assert walk.supported == ("ttft.queue.kv_capacity",)
    assert walk.canary is not None
    assert walk.canary["objective"]["kind"] == "ttft"
    assert walk.canary["objective"]["threshold_seconds"] == 2.5
