"""Each injected incident moves the signals its ground truth names, the way it names them."""

from __future__ import annotations

from functools import cache

import pytest

from fleetsim.fleet import FleetModel
from fleetsim.history import History
from fleetsim.scenarios import CATALOG_KEYS, SCENARIOS, ScenarioError, install
from fleetsim.signals import Recording, measure, moved
from fleetsim.workloads import diurnal
from inventory.catalog import entry_for_name

END = 1_767_225_600.0 + 14 * 3600
AT, DURATION = 300.0, 420.0
INCIDENTS = [name for name in SCENARIOS if name != "steady"]
# Scenarios that need a bigger fleet than the default 4 replicas: a straggler hides among
# 4 or more replicas of its model, and the fleet layout gives the first model every other
# slot (as collective-degradation and lora-thrash find their TP and LoRA replicas in it).
FLEET_SIZE = {"hidden-straggler": 7}


@cache
def run(scenario: str, target: int | None = None) -> Recording:
    """One recorded run per scenario, shared by the tests that look at it."""
    targets = None if target is None else [target]
    history = History(
        replicas=FLEET_SIZE.get(scenario, 4), scenario=scenario, hours=0.2, at=AT,
        duration=DURATION, end=END, targets=targets,
    )  # fmt: skip
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
        assert moved(signal, before, during), report


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


@pytest.mark.parametrize(
    ("dialect", "older", "appears", "disappears"),
    [
        ("current", "v1-0.10", "vllm:gpu_cache_usage_perc", "vllm:num_requests_waiting_by_reason"),
        ("v1-0.10", "v1-0.8", None, "vllm:kv_cache_usage_perc"),
        ("v1-0.8", "v0", "vllm:num_requests_swapped", "vllm:gpu_prefix_cache_queries_total"),
    ],
)
def test_version_skew_rolls_each_dialect_back_to_the_next_older_one(
    dialect: str, older: str, appears: str | None, disappears: str
) -> None:
    truth = install(FleetModel(replicas=2, dialect=dialect), "version-skew", at=60.0)
    assert truth["incident_dialects"] == {0: older}
    present = [s["metric"] for s in truth["expected_signals"] if s["direction"] == "present"]
    absent = [s["metric"] for s in truth["expected_signals"] if s["direction"] == "absent"]
    assert present == ([appears] if appears else [])
    assert absent[0] == disappears


def test_version_skew_from_v1_0_10_also_shows_the_engine_label_and_long_buckets_go() -> None:
    truth = install(FleetModel(replicas=1, dialect="v1-0.10"), "version-skew", at=60.0)
    labels = [s["labels"] for s in truth["expected_signals"] if s["labels"]]
    assert labels == [{"engine": "0"}, {"le": "2560.0"}]


def test_version_skew_on_the_oldest_dialect_says_there_is_nothing_older() -> None:
    with pytest.raises(ScenarioError, match="already runs the oldest dialect .v0."):
        install(FleetModel(replicas=2, dialect="v0"), "version-skew", at=60.0)


def test_version_skew_on_a_mixed_fleet_rolls_back_from_the_replicas_own_dialect() -> None:
    fleet = FleetModel(replicas=3, dialect_of={2: "v1-0.8"})
    truth = install(fleet, "version-skew", at=60.0, targets=[0, 2])
    assert truth["incident_dialects"] == {0: "v1-0.10", 2: "v0"}
    by_metric = {s["metric"]: s["replicas"] for s in truth["expected_signals"]}
    assert by_metric["vllm:gpu_cache_usage_perc"] == [0]
    assert by_metric["vllm:num_requests_swapped"] == [2]


def test_version_skew_with_dp_needs_an_older_dialect_that_has_the_engine_label() -> None:
    with pytest.raises(ScenarioError, match="has no engine label"):
        install(FleetModel(replicas=1, dialect="v1-0.10", dp=2), "version-skew", at=60.0)


def burst_extra(hour: float) -> tuple[float, float]:
    """(extra requests/s of a burst starting at `hour` UTC, the daily factor then)."""
    start = 1_767_225_600.0 + hour * 3600
    fleet = FleetModel(replicas=4, epoch=start - 300.0)
    install(fleet, "traffic-burst", at=300.0)
    burst = [s for s in fleet.streams if s.pinned is not None]
    assert burst and not any(s.follow_diurnal for s in burst)  # sized for its window
    return sum(s.base_rate for s in burst), diurnal(start)


def test_a_traffic_burst_is_sized_against_the_traffic_of_its_hour() -> None:
    night, night_daily = burst_extra(3.0)
    peak, peak_daily = burst_extra(15.0)
    assert night_daily < 0.7 < 1.3 < peak_daily
    # Baseline load is 45 % of capacity times the daily factor; the burst tops it up to 1.9x.
    assert night / peak == pytest.approx((1.9 - 0.45 * night_daily) / (1.9 - 0.45 * peak_daily))


def test_every_scenario_names_the_triage_branch_a_correct_diagnosis_reaches() -> None:
    branches = {name: s.branch for name, s in SCENARIOS.items()}
    assert branches["steady"] == "healthy"
    assert all(branch for branch in branches.values())
    truth = install(FleetModel(replicas=2), "kv-pressure", at=60.0)
    assert truth["expected_triage_branch"] == "ttft.queue.kv_capacity"


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


def test_each_catalog_key_is_the_one_fleetscopes_catalog_gives_the_exposed_name() -> None:
    for name, key in CATALOG_KEYS.items():
        found = entry_for_name(name)
        assert found is not None and found.key == key, name
