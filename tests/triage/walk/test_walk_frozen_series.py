"""What a walk keeps besides its verdicts: the series behind its figures (frozen with an
incident, drawn on its page) and, when the backend holds it, the same window a day
earlier beside the hour before."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from fleetsim.history import History
from fleetsim.scenarios import SCENARIOS
from inventory.history import history_import
from inventory.models import Fleet
from tests.triage.walk.scenario_walks import (
    BASELINE_SECONDS,
    END,
    STEP,
    history_of,
    walk_history,
    walk_window,
)
from triage.walk import Walk

DAY = 86_400


def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def loopback(db: None, settings: Any) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True  # fleetsim's targets are on 127.0.0.1


def test_a_walk_freezes_each_series_per_replica_with_gaps_where_a_replica_was_down(
    loopback: None, tmp_path: Path
) -> None:
    history = history_of("replica-down", seed=1)
    walk = walk_history(history, tmp_path).to_dict()
    down = "127.0.0.1:18000"  # the manifest's affected replica
    assert [r["instances"]["vllm"] for r in history.manifest["affected_replicas"]] == [down]
    charts = {c["name"]: c for c in walk["charts"]}
    assert list(charts)[:3] == ["ttft_trend", "itl_trend", "waiting"]
    assert {"kv_usage", "running", "sm_clock", "power"} <= set(charts)
    kv = charts["kv_usage"]
    assert kv["unit"] == "ratio" and "vllm:kv_cache_usage_perc" in kv["source"]
    assert [s["replica"] for s in kv["series"]] == [
        "127.0.0.1:18000", "127.0.0.1:18001", "127.0.0.1:18002",
    ]  # fmt: skip
    start = history.start + history.manifest["window"]["start_offset_s"]
    assert kv["t"][0] <= start - BASELINE_SECONDS + 2 * STEP and kv["t"][-1] >= start
    by_replica = {s["replica"]: s["v"] for s in kv["series"]}
    end = history.start + history.manifest["window"]["end_offset_s"]
    inside = [
        v
        for t, v in zip(kv["t"], by_replica[down], strict=True)
        if start + 2 * STEP < t < end - 2 * STEP
    ]
    # Missing is not zero: the downed replica's line has gaps, its peers' do not.
    assert inside and all(v is None for v in inside)
    assert all(v is not None for v in by_replica["127.0.0.1:18001"][-5:])
    assert all(len(s["v"]) == len(kv["t"]) for c in walk["charts"] for s in c["series"])
    # DCGM is charted per replica (over its GPUs), by the replica's name.
    assert {s["replica"] for s in charts["sm_clock"]["series"]} == set(by_replica)
    assert walk["day_before"] is None
    assert any(
        n.startswith("the same window a day earlier: not read, the embedded store holds data only")
        for n in walk["notes"]
    )


def _history(scenario: str, *, end: float, seed: int) -> History:
    seconds = BASELINE_SECONDS + SCENARIOS[scenario].duration_s
    return History(replicas=3, scenario=scenario, hours=seconds / 3600, step=STEP,
                   at=BASELINE_SECONDS, seed=seed, end=end)  # fmt: skip


def _walk_after(yesterday: str, tmp_path: Path) -> Walk:
    """kv-pressure today, after a day that had `yesterday` over the same window."""
    for name, history in (
        ("yesterday", _history(yesterday, end=END - DAY, seed=1)),
        ("today", today := _history("kv-pressure", end=END, seed=0)),
    ):
        history.write_openmetrics(tmp_path / f"{name}.om")
        history_import(fleet_slug="kv", path=tmp_path / f"{name}.om")
    return walk_window(Fleet.objects.get(slug="kv"), today.manifest, today)


def test_a_quiet_day_before_stands_beside_the_rise_without_doubt(
    loopback: None, tmp_path: Path
) -> None:
    walk = _walk_after("steady", tmp_path)
    assert walk.supported == ("ttft.queue.kv_capacity",)
    assert walk.day_before is not None
    assert [_unix(t) + DAY for t in walk.day_before] == [_unix(t) for t in walk.window]
    ttft = walk.node("ttft")
    (figure,) = [f for f in ttft.figures if f.replicas == ("127.0.0.1:18000",)]
    assert figure.day_before is not None and figure.value is not None
    assert figure.value > 3 * figure.day_before  # yesterday's same window was quiet
    assert "a day earlier" not in ttft.reason and ttft.confidence > 0.8


def test_the_same_rise_a_day_earlier_is_named_as_a_possible_daily_pattern(
    loopback: None, tmp_path: Path
) -> None:
    walk = _walk_after("kv-pressure", tmp_path)
    ttft = walk.node("ttft")
    assert ttft.verdict == "supported"  # the hour before still decides; the day adds doubt
    assert "about as high over the same window a day earlier (a daily pattern?)" in ttft.reason
    assert ttft.confidence < 0.5
    assert walk.supported == ("ttft.queue.kv_capacity",)
