"""A simulated incident as the walk meets it: `fleetsim` writes the fleet's history with
its ground truth, `history_import` loads it into the embedded store through the live
write path, and the walk runs over the manifest's incident window against the 20 minutes
before it. The walk's answer is compared with the manifest, not with another backend."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet
from triage.walk import Walk, walk_fleet

# A fixed end on the 30 s grid, so a row is the same history on every run.
END = 1_794_999_990 // 30 * 30
BASELINE_SECONDS = 1200.0
STEP = 30.0


def history_of(
    scenario: str,
    *,
    seed: int,
    dialect: str = "current",
    replicas: int = 3,
    dialect_of: Mapping[int, str] | None = None,
    end: float = END,
) -> History:
    from fleetsim.scenarios import SCENARIOS

    duration = SCENARIOS[scenario].duration_s
    return History(
        replicas=replicas,
        scenario=scenario,
        hours=(BASELINE_SECONDS + duration) / 3600,
        step=STEP,
        at=BASELINE_SECONDS,
        seed=seed,
        end=end,
        dialect=dialect,
        dialect_of=dialect_of,
    )


def without_families(path: Path, names: tuple[str, ...]) -> None:
    """Drop whole families from an OpenMetrics history: replicas built without them."""
    kept = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            body = line[7:] if line.startswith(("# TYPE ", "# HELP ", "# UNIT ")) else line
            if any(body.startswith((f"{n} ", f"{n}{{", f"{n}_")) for n in names):
                continue
            kept.append(line)
    path.write_text("".join(kept), encoding="utf-8")


def walk_history(
    history: History, tmp_path: Path, *, hide: tuple[str, ...] = (), **more: Any
) -> Walk:
    path = tmp_path / "fleet.om"
    history.write_openmetrics(path)
    if hide:
        without_families(path, hide)
    slug = f"sim-{history.run['scenario']}-{history.run['seed']}"
    history_import(fleet_slug=slug, path=path)
    return walk_window(Fleet.objects.get(slug=slug), history.manifest, history, **more)


def incident_window(manifest: dict[str, Any], history: History) -> tuple[datetime, timedelta]:
    start = history.start + manifest["window"]["start_offset_s"]
    end = min(history.start + manifest["window"]["end_offset_s"], history.end)
    return datetime.fromtimestamp(end, UTC), timedelta(seconds=end - start)


def walk_window(fleet: Fleet, manifest: dict[str, Any], history: History, **more: Any) -> Walk:
    at, since = incident_window(manifest, history)
    return walk_fleet(fleet, at=at, since=since, **more)


# Every scenario with a branch the walk must reach (one row per scenario and seed in the
# table tests); `hidden-straggler` needs a fleet of its own size.
TABLE_SCENARIOS = (
    "steady",
    "traffic-burst",
    "long-prompt-surge",
    "kv-pressure",
    "cold-restart",
    "tokenizer-saturation",
    "gpu-throttle",
    "collective-degradation",
    "replica-down",
    "version-skew",
    "lora-thrash",
    "healthy-burst",
    "step-work",
    "preemption",
    "retry-storm",
    "gateway-errors",
    "artifact-regression",
)


def assert_walk_reaches_the_manifest_branch(history: History, tmp_path: Path) -> None:
    """Exactly the manifest's leaf is supported, and a breach is found unless healthy."""
    walk = walk_history(history, tmp_path)
    expected = history.manifest["expected_triage_branch"]
    assert walk.supported == (expected,), walk.node(expected).reason
    assert walk.breach.found is (expected != "healthy")


def table_test(*, seed: int, **history_options: Any) -> Callable[..., None]:
    """The table's test for one seed and dialect setting, one row per scenario: each table
    file holds one, so parallel workers share the table evenly."""

    @pytest.mark.django_db
    @pytest.mark.parametrize("scenario", TABLE_SCENARIOS)
    def test_the_walk_supports_exactly_the_manifest_branch(
        scenario: str, tmp_path: Path, settings: Any
    ) -> None:
        settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
        history = history_of(scenario, seed=seed, **history_options)
        assert_walk_reaches_the_manifest_branch(history, tmp_path)

    return test_the_walk_supports_exactly_the_manifest_branch
