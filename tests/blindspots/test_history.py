"""Since when: the time the replicas stopped exposing a metric, taken from the layouts
FleetScope stored, checked against the recorded history's own change times."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from blindspots.history import layout_dialect
from blindspots.verdicts import check_selectors
from inventory.models import Endpoint
from inventory.store import current_layouts
from tests.blindspots.fleets_b import END, R0, R1, load, record, selector

OLD = "vllm:gpu_cache_usage_perc"


def utc(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, tz=UTC)


def test_replicas_upgraded_between_two_histories_stopped_exposing_it_at_the_first_new_frame(
    db: None, tmp_path: Path
) -> None:
    before = record(tmp_path / "old.om", minutes=3, dialect="v1-0.8", end=END - 240)
    after = record(tmp_path / "new.om", minutes=3, dialect="current", end=END)
    load("upgraded", tmp_path / "old.om")
    fleet = load("upgraded", tmp_path / "new.om")
    assert before.end < after.start

    [verdict] = check_selectors(fleet, [selector(OLD)])

    assert verdict.verdict == "blind"
    assert verdict.since == utc(after.start)
    assert verdict.since_text == (
        f"2 of 2 replicas stopped exposing it at {utc(after.start):%Y-%m-%d %H:%M:%S} UTC "
        "when they were upgraded to current vLLM"
    )


def test_a_replica_rolled_back_and_upgraded_again_stopped_when_it_came_back(
    db: None, tmp_path: Path
) -> None:
    history = record(tmp_path / "skew.om", minutes=8, scenario="version-skew", at=60, duration=150)
    fleet = load("skew", tmp_path / "skew.om")
    window_end = history.manifest["window"]["end"]
    assert history.manifest["affected_replicas"][0]["incident_dialect"] == "v1-0.10"
    # The replica restarts on its own dialect once its weights are loaded again: its first
    # scrape after that is the first frame without the old name.
    load_time = history.model.load_time(history.model.replicas[0])
    back = math.ceil((window_end + load_time) / history.step) * history.step

    [verdict] = check_selectors(fleet, [selector(OLD)])

    assert verdict.verdict == "blind"
    assert verdict.since == utc(back)
    assert verdict.since_text == (
        f"1 of 2 replicas ({R0}) stopped exposing it at {utc(back):%Y-%m-%d %H:%M:%S} UTC "
        f"when it was upgraded to current vLLM; 1 ({R1}) never exposed while FleetScope "
        "watched"
    )


def test_the_dialect_of_a_stored_layout_is_told_from_its_names(db: None, tmp_path: Path) -> None:
    record(tmp_path / "mixed.om", dialect="current", dialect_of={1: "v1-0.8"})
    fleet = load("mixed", tmp_path / "mixed.om")
    ids = {e.instance: e.pk for e in Endpoint.objects.filter(fleet=fleet, kind="vllm")}
    layouts = current_layouts(endpoint_ids=list(ids.values()))

    assert layout_dialect(layouts[ids[R0]]) == "current"
    assert layout_dialect(layouts[ids[R1]]) == "v1-0.8"
