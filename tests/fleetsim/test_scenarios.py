"""Each injected incident moves the signals its ground truth names, the way it names them."""

from __future__ import annotations

from functools import cache

import pytest

from fleetsim.fleet import FleetModel
from fleetsim.history import History
from fleetsim.scenarios import SCENARIOS, ScenarioError, install
from fleetsim.signals import Recording, measure, moved

END = 1_767_225_600.0 + 14 * 3600
AT, DURATION = 300.0, 420.0
INCIDENTS = [name for name in SCENARIOS if name != "steady"]


@cache
def run(scenario: str, target: int | None = None) -> Recording:
    """One recorded run per scenario, shared by the tests that look at it."""
    targets = None if target is None else [target]
    history = History(
        replicas=4, scenario=scenario, hours=0.2, at=AT, duration=DURATION, end=END, targets=targets
    )
    return Recording.of(history)


@pytest.mark.parametrize("scenario", INCIDENTS)
def test_each_incident_moves_its_expected_signals(scenario: str) -> None:
    rec = run(scenario)
    signals = rec.manifest["expected_signals"]
    assert signals
    report = []
    for signal in signals:
        before, during = measure(rec, signal)
        report.append((signal["metric"], signal["direction"], before, during))
        assert moved(signal["direction"], before, during), report


def test_steady_fleet_is_healthy() -> None:
    rec = run("steady")
    assert rec.manifest["expected_triage_branch"] == "healthy"
    for flat in (scrapes[-1] for scrapes in rec.scrapes.values()):
        assert flat is not None
        preemptions = [v for (n, _), v in flat.items() if n == "vllm:num_preemptions_total"]
        assert sum(preemptions) == 0
        waiting = [v for (n, _), v in flat.items() if n == "vllm:num_requests_waiting"]
        assert sum(waiting) < 20


def test_kv_pressure_raises_kv_usage_and_preemptions() -> None:
    rec = run("kv-pressure")
    (usage, preemptions) = (
        measure(rec, s)
        for s in rec.manifest["expected_signals"]
        if s["metric"] in ("vllm:kv_cache_usage_perc", "vllm:num_preemptions_total")
    )
    assert usage[0] < 0.5 < 0.9 < usage[1]
    assert preemptions[0] == 0 < preemptions[1]


def test_manifest_names_incident_window_replicas_and_branch() -> None:
    rec = run("gpu-throttle", target=2)
    m = rec.manifest
    assert m["incident"] == "gpu-throttle"
    assert m["expected_triage_branch"] == "tpot.straggler.gpu_throttle"
    assert m["window"]["end"] - m["window"]["start"] == DURATION
    assert m["window"]["start"] == m["fleet_start"] + AT
    (affected,) = m["affected_replicas"]
    assert affected["index"] == 2 and affected["instances"]["vllm"] == "127.0.0.1:18002"
    assert affected["instances"]["dcgm"] == "127.0.0.1:19002"


def test_version_skew_serves_the_older_dialect_only_on_the_affected_replica() -> None:
    rec = run("version-skew")
    skewed = rec.manifest["affected_replicas"][0]["instances"]["vllm"]
    others = [r["instances"]["vllm"] for r in rec.manifest["replicas"]]
    others.remove(skewed)
    during = rec.times.index(rec.manifest["window"]["start"] + 240)
    assert rec.has(skewed, "vllm:gpu_cache_usage_perc")[during]
    assert not any(rec.has(o, "vllm:gpu_cache_usage_perc")[during] for o in others)


def test_lora_thrash_shows_many_adapters_in_lora_requests_info() -> None:
    rec = run("lora-thrash")
    inst = rec.manifest["affected_replicas"][0]["instances"]["vllm"]
    waiting: set[str] = set()
    for flat in rec.scrapes[inst]:
        for (name, labels), _ in (flat or {}).items():
            if name == "vllm:lora_requests_info":
                waiting.update(filter(None, dict(labels)["waiting_lora_adapters"].split(",")))
    assert len(waiting) > 4  # more adapters wanted than max_loras slots
    assert rec.manifest["lora_adapters_by_tenant"]["acme"]


def test_collective_degradation_needs_a_tensor_parallel_replica() -> None:
    fleet = FleetModel(replicas=1)
    with pytest.raises(ScenarioError, match="tensor parallelism"):
        install(fleet, "collective-degradation", at=10.0)


def test_targets_outside_the_fleet_are_refused() -> None:
    with pytest.raises(ScenarioError, match="replica 7 does not exist"):
        install(FleetModel(replicas=2), "gpu-throttle", at=10.0, targets=[7])


def test_unknown_scenarios_are_refused() -> None:
    with pytest.raises(ScenarioError, match="unknown scenario"):
        install(FleetModel(replicas=1), "meteor-strike", at=10.0)
