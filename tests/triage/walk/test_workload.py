"""Workload shifts between a baseline and an incident window, read from simulated
histories loaded through `history_import`: a long-prompt surge, a traffic burst, and a
steady fleet where nothing moved."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet
from triage.walk.workload import THRESHOLDS, Shift, workload_shifts

# A fixed end on the 30 s grid: every run records the same half hour.
END = 1_794_999_990 // 30 * 30
STEP = 30.0
# The incident's five minutes against the five before, both where the steady fleet's own
# mix holds still: from its 15th minute a batch tenant's share doubles on its own (fleetsim's
# diurnal mix), which is a real workload shift, and the steady case is to show none.
AT = 600.0
DURATION = 300.0
MODEL = "llama-3.1-8b-instruct"  # replicas 0 and 2; replica 1 serves the 70B
CHANGE_POINT_SLACK = 180.0  # a 120 s range at a 60 s step shows a step within this


@dataclass(frozen=True)
class Loaded:
    fleet: Fleet
    manifest: dict[str, Any]

    @property
    def window(self) -> tuple[datetime, datetime]:
        window = self.manifest["window"]
        return utc(window["start"]), utc(window["end"])

    @property
    def baseline(self) -> tuple[datetime, datetime]:
        # The five minutes before the incident, after the first five of warm-up.
        start = self.manifest["window"]["start"]
        return utc(start - DURATION), utc(start)


def utc(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def load(scenario: str, tmp_path_factory: pytest.TempPathFactory, blocker: Any) -> Iterator[Loaded]:
    history = History(replicas=3, scenario=scenario, hours=0.5, step=STEP, at=AT, seed=0,
                      duration=DURATION, end=END)  # fmt: skip
    path = tmp_path_factory.mktemp(scenario) / "history.om"
    manifest = history.write_openmetrics(path)
    assert manifest["window"]["start"] == history.start + AT
    with blocker.unblock():
        fleet = history_import(fleet_slug=f"wl-{scenario}", path=path).fleet
    yield Loaded(fleet, manifest)
    with blocker.unblock():
        fleet.delete()


@pytest.fixture(scope="module")
def steady(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("steady", tmp_path_factory, django_db_blocker)


@pytest.fixture(scope="module")
def surge(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("long-prompt-surge", tmp_path_factory, django_db_blocker)


@pytest.fixture(scope="module")
def burst(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("traffic-burst", tmp_path_factory, django_db_blocker)


def shifts(loaded: Loaded, model_name: str | None = MODEL) -> dict[str, Shift]:
    found = workload_shifts(
        loaded.fleet, model_name=model_name, window=loaded.window, baseline=loaded.baseline,
        backend="local",
    )  # fmt: skip
    return {s.figure.name: s for s in found}


def since(shift: Shift) -> float:
    assert shift.since is not None
    return datetime.fromisoformat(shift.since).timestamp()


@pytest.mark.django_db
def test_a_steady_fleet_shifted_nothing(steady: Loaded) -> None:
    for model_name in (MODEL, None):
        found = shifts(steady, model_name)
        assert "request_rate_requests_per_second" in found
        assert [n for n, s in found.items() if s.changed] == [], found
        assert all(s.since is None for s in found.values())


@pytest.mark.django_db
def test_long_prompts_move_the_prompt_length_from_the_window_start(surge: Loaded) -> None:
    found = shifts(surge)
    mean = found["prompt_len_mean_tokens"]
    assert mean.changed, mean
    assert mean.figure.value is not None and mean.figure.baseline is not None
    assert mean.figure.value - mean.figure.baseline >= THRESHOLDS["prompt_len_mean"].delta
    start = surge.manifest["window"]["start"]
    assert start - 60 <= since(mean) <= start + CHANGE_POINT_SLACK, mean.since
    assert not found["request_rate_requests_per_second"].changed


@pytest.mark.django_db
def test_a_burst_moves_the_request_rate_from_the_window_start(burst: Loaded) -> None:
    found = shifts(burst)
    rate = found["request_rate_requests_per_second"]
    assert rate.changed, rate
    needed = THRESHOLDS["request_rate"].ratio
    assert rate.ratio is not None and needed is not None and rate.ratio >= needed
    start = burst.manifest["window"]["start"]
    assert start - 60 <= since(rate) <= start + CHANGE_POINT_SLACK, rate.since
    assert "vllm:request_success_total" in rate.figure.source


@pytest.mark.django_db
def test_figures_name_their_unit_and_serialise(surge: Loaded) -> None:
    found = shifts(surge, None)
    assert any(name.startswith("model_share_ratio[") for name in found)
    assert any(name.startswith("tenant_share_ratio[") for name in found)
    for name, shift in found.items():
        figure = shift.figure
        assert name.split("[")[0].endswith(f"_{figure.unit}"), name
        assert figure.threshold and figure.source
        assert set(shift.to_dict()) == {"figure", "changed", "ratio", "since"}


@pytest.mark.django_db
def test_a_baseline_before_any_data_is_missing_not_zero(surge: Loaded) -> None:
    start = surge.manifest["window"]["start"]
    found = workload_shifts(
        surge.fleet, model_name=MODEL, window=surge.window,
        baseline=(utc(start - 7200), utc(start - 3600)), backend="local",
    )  # fmt: skip
    rate = next(s for s in found if s.figure.name == "request_rate_requests_per_second")
    assert rate.figure.baseline is None and not rate.changed and rate.ratio is None
    assert "baseline: no data" in rate.figure.source
