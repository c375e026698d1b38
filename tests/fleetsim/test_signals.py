"""Every manifest signal moves as promised in the OpenMetrics the history wrote.

The table runs each scenario over three settings no other fleetsim test uses (seeds
past 100, fleets of 5, 6 and 9 replicas, or 7, 8 and 9 where a scenario needs more,
every older dialect, data-parallel engines, mixed fleets, night, morning and evening),
parses the history file a consumer would load, and measures each expected signal there
with the signal's own thresholds.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fleetsim.history import History
from fleetsim.scenarios import SCENARIOS
from fleetsim.signals import Recording, check, instances_for, measure, moved, signal_names

DAY = 1_767_225_600.0  # 2026-01-01T00:00Z
INCIDENTS = [name for name in SCENARIOS if name != "steady"]
MIXED = ((0, "v1-0.8"), (1, "v0"), (2, "v0"), (4, "v1-0.10"))  # the rest speak current


@dataclass(frozen=True)
class Setting:
    label: str
    replicas: int
    seed: int
    dialect: str
    end_hour: float  # UTC hour of the history's last scrape
    at: float
    duration: float
    dp: int = 1
    dialect_of: tuple[tuple[int, str], ...] = ()
    targets: tuple[int, ...] | None = None

    def history(self, scenario: str) -> History:
        span = self.at + self.duration + 60.0
        return History(
            replicas=self.replicas,
            scenario=scenario,
            hours=span / 3600.0,
            at=self.at,
            duration=self.duration,
            targets=None if self.targets is None else list(self.targets),
            dialect=self.dialect,
            dialect_of=dict(self.dialect_of),
            dp=self.dp,
            seed=self.seed,
            end=DAY + self.end_hour * 3600.0,
        )


def settings(k: int, scenario: str) -> list[Setting]:
    """Three held-out settings for the k-th scenario: old dialect at night, data-parallel
    engines in the evening, a mixed fleet in the morning."""
    night_dialect = "v0" if k % 2 else "v1-0.8"
    dp_dialect = "v1-0.10"
    mixed_targets = None
    sizes = (5, 6, 9)
    if scenario == "hidden-straggler":
        sizes = (7, 8, 9)  # a straggler hides among 4 or more replicas of its model
    if scenario == "version-skew":
        night_dialect = "v1-0.8"  # v0 has nothing older
        dp_dialect = "current"  # v1-0.10's predecessor has no engine label for --dp 2
        mixed_targets = (4,)  # v1-0.10 -> v1-0.8: the engine label and long buckets go
    return [
        Setting(f"{night_dialect}-night", sizes[0], 101 + k, night_dialect, 3.0, 300.0, 420.0),
        Setting(f"{dp_dialect}-dp2-evening", sizes[1], 201 + k, dp_dialect, 19.5, 360.0, 360.0,
                dp=2),
        Setting("mixed-morning", sizes[2], 301 + k, "current", 8.0, 270.0, 480.0,
                dialect_of=MIXED, targets=mixed_targets),
    ]  # fmt: skip


CASES = [
    pytest.param(scenario, setting, id=f"{scenario}-{setting.label}")
    for k, scenario in enumerate(INCIDENTS)
    for setting in settings(k, scenario)
]


@cache
def written(scenario: str, setting: Setting) -> Recording:
    """The history's OpenMetrics file, read back as a consumer reads it (the signals'
    families only, so the recordings the tests share stay small)."""
    with tempfile.TemporaryDirectory(prefix="fleetsim-signals-") as folder:
        path = Path(folder) / "fleet.om"
        manifest = setting.history(scenario).write_openmetrics(path)
        return Recording.of_signals(path, manifest)


@pytest.mark.parametrize(("scenario", "setting"), CASES)
def test_every_signal_moves_as_the_manifest_says_in_the_written_history(
    scenario: str, setting: Setting
) -> None:
    rec = written(scenario, setting)
    assert rec.manifest["expected_signals"]
    report = [
        (s["metric"], s["labels"], s["direction"], s["replicas"], round(b, 6), round(d, 6), ok)
        for s, b, d, ok in check(rec)
    ]
    assert all(ok for *_, ok in report), report


@pytest.mark.parametrize(("scenario", "setting"), CASES)
def test_every_signal_names_a_series_its_replicas_really_expose(
    scenario: str, setting: Setting
) -> None:
    rec = written(scenario, setting)
    window = rec.manifest["window"]
    for signal in rec.manifest["expected_signals"]:
        for inst in instances_for(rec.manifest, signal):
            seen = [
                bool(h)
                for t, h in zip(rec.times, rec.has(inst, signal["metric"]), strict=True)
                if window["start"] - 240 <= t < window["end"]
            ]
            assert any(seen), (signal["metric"], inst)


def test_a_mixed_fleet_names_each_signal_as_each_replica_exposes_it() -> None:
    history = History(replicas=5, scenario="gpu-throttle", hours=0.1, at=120.0, duration=180.0,
                      targets=[0, 2, 4], dialect_of={0: "v0", 2: "v1-0.10"}, seed=111)  # fmt: skip
    itl = {
        s["metric"]: s["replicas"]
        for s in history.manifest["expected_signals"]
        if s["key"] == "vllm:inter_token_latency_seconds"
    }
    assert itl == {
        "vllm:time_per_output_token_seconds": [0, 2],
        "vllm:inter_token_latency_seconds": [4],
    }
    assert [r["dialect"] for r in history.manifest["replicas"]] == [
        "v0", "current", "v1-0.10", "current", "current",
    ]  # fmt: skip
    assert history.manifest["run"]["dialect_of"] == {"0": "v0", "2": "v1-0.10"}


def test_signals_that_a_layout_cannot_show_are_listed_as_unobservable() -> None:
    history = History(replicas=2, scenario="tokenizer-saturation", hours=0.05, at=60.0,
                      duration=60.0, dp=2, seed=112)  # fmt: skip
    (cpu,) = history.manifest["unobservable_signals"]
    assert cpu["key"] == "process_cpu_seconds_total" and cpu["replicas"] == [0]
    assert "--dp 2" in cpu["why"]
    assert "process_cpu_seconds_total" not in signal_names(history.manifest)


@cache
def small_run() -> tuple[History, Recording]:
    history = History(replicas=2, scenario="replica-down", hours=0.08, at=120.0, duration=120.0,
                      end=DAY + 13 * 3600.0, seed=113)  # fmt: skip
    return history, Recording.of(history)


def test_reading_the_openmetrics_file_measures_what_the_families_showed(tmp_path: Path) -> None:
    history, from_families = small_run()
    again = History(replicas=2, scenario="replica-down", hours=0.08, at=120.0, duration=120.0,
                    end=DAY + 13 * 3600.0, seed=113)  # fmt: skip
    manifest = again.write_openmetrics(tmp_path / "fleet.om")
    from_file = Recording.of_signals(tmp_path / "fleet.om", manifest)
    assert from_file.times == from_families.times
    for signal in manifest["expected_signals"]:
        assert measure(from_file, signal) == measure(from_families, signal)


def test_an_error_series_born_inside_the_window_counts_as_rising_from_zero() -> None:
    history, rec = small_run()
    (errors,) = [s for s in history.manifest["expected_signals"] if s["scope"] == "gateway"]
    gateway = instances_for(history.manifest, errors)[0]
    start = history.manifest["window"]["start"]
    born = [
        t
        for t, flat in zip(rec.times, rec.scrapes[gateway], strict=True)
        if flat and any(n == errors["metric"] and ("status", "5xx") in lab for n, lab in flat)
    ]
    assert born and born[0] >= start  # no 5xx series at all before the replica died
    before, during = measure(rec, errors)
    assert before == 0 < during and moved(errors, before, during)


def signal_of(**fields: Any) -> dict[str, Any]:
    return {"rel": 0.0, "delta": 0.0} | fields


@pytest.mark.parametrize(
    ("signal", "before", "during", "ok"),
    [
        (signal_of(direction="up", rel=0.2), 50.0, 59.0, False),
        (signal_of(direction="up", rel=0.2), 50.0, 61.0, True),
        (signal_of(direction="up", delta=5.0), 49.6, 53.0, False),  # degrees, not a ratio
        (signal_of(direction="up", delta=5.0), 49.6, 62.7, True),
        (signal_of(direction="down", rel=0.3), 1980.0, 990.0, True),
        (signal_of(direction="not_up", rel=0.5, delta=0.05), 0.0065, 0.0048, True),
        (signal_of(direction="not_up", rel=0.5, delta=0.05), 0.02, 0.5, False),
        (signal_of(direction="flat", rel=0.1), 1.0, 0.8, False),
        (signal_of(direction="present"), 0.0, 0.8, True),
        (signal_of(direction="absent"), 1.0, 0.0, True),
        (signal_of(direction="absent"), 1.0, math.nan, False),  # never scraped: not shown
    ],
)
def test_moved_uses_each_signals_own_thresholds(
    signal: dict[str, Any], before: float, during: float, ok: bool
) -> None:
    assert moved(signal, before, during) is ok
