"""What changed around a window, read from simulated histories loaded through
`history_import`: restarts, a rollback's dialect change, a replica going down, and
nothing on a steady fleet."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from audit.actor import acting_as
from audit.models import AuditEntry
from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet
from slo.models import Slo
from triage.walk.changes import changes_in
from triage.walk.types import Change

# A fixed end on the 30 s grid: every run records the same half hour.
END = 1_794_999_990 // 30 * 30
STEP = 30.0
AT = 900.0  # the incident starts half-way through the half hour
MODEL = "llama-3.1-8b-instruct"  # replicas 0 and 2; replica 1 serves the 70B


@dataclass(frozen=True)
class Loaded:
    fleet: Fleet
    start: float  # unix start of the history
    manifest: dict[str, Any]


def utc(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def unix(change: Change) -> float:
    assert change.at is not None
    return datetime.fromisoformat(change.at).timestamp()


def load(
    scenario: str,
    tmp_path_factory: pytest.TempPathFactory,
    django_db_blocker: Any,
    **options: Any,
) -> Iterator[Loaded]:
    history = History(replicas=3, scenario=scenario, hours=0.5, step=STEP, at=AT, seed=0,
                      end=END, **options)  # fmt: skip
    path = tmp_path_factory.mktemp(scenario) / "history.om"
    manifest = history.write_openmetrics(path)
    with django_db_blocker.unblock():
        fleet = history_import(fleet_slug=f"chg-{scenario}", path=path).fleet
    yield Loaded(fleet, history.start, manifest)
    with django_db_blocker.unblock():
        fleet.delete()


@pytest.fixture(scope="module")
def steady(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("steady", tmp_path_factory, django_db_blocker)


@pytest.fixture(scope="module")
def cold_restart(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("cold-restart", tmp_path_factory, django_db_blocker, duration=600.0)


@pytest.fixture(scope="module")
def version_skew(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("version-skew", tmp_path_factory, django_db_blocker, duration=600.0)


@pytest.fixture(scope="module")
def replica_down(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker: Any
) -> Iterator[Loaded]:
    yield from load("replica-down", tmp_path_factory, django_db_blocker, duration=300.0)


def whole(loaded: Loaded, model_name: str | None = MODEL) -> tuple[Change, ...]:
    """The changes over the history after its first five minutes (the lookbacks' warm-up)."""
    return changes_in(
        loaded.fleet, model_name=model_name, start=utc(loaded.start + 300), end=utc(END)
    )


def affected(loaded: Loaded) -> dict[str, dict[str, Any]]:
    return {r["instances"]["vllm"]: r for r in loaded.manifest["affected_replicas"]}


@pytest.mark.django_db
def test_a_steady_fleet_changed_nothing(steady: Loaded) -> None:
    assert whole(steady) == ()
    assert whole(steady, model_name=None) == ()


@pytest.mark.django_db
def test_a_configuration_change_in_the_window_is_listed_beside_the_engines(
    steady: Loaded,
) -> None:
    with acting_as("alice"):
        slo = Slo.objects.create(fleet=steady.fleet, slug="chat", name="Chat")
    # Recorded now; dated into the window as if made then (and one well before it).
    AuditEntry.objects.filter(object_type="slo", object_id=str(slo.pk)).update(
        at=utc(steady.start + 600)
    )
    with acting_as("bob"):
        slo.owner = "serving"
        slo.save()
    AuditEntry.objects.filter(actor="bob").update(at=utc(steady.start - 3600))
    [change] = whole(steady)
    assert (change.kind, change.instance, unix(change)) == (
        "configuration", "", steady.start + 600,
    )  # fmt: skip
    assert change.description.startswith(f"SLO {steady.fleet.slug}/chat: created with ")
    assert change.description.endswith(", by alice")


@pytest.mark.django_db
def test_a_rollout_restarts_each_affected_replica_once_near_its_scheduled_time(
    cold_restart: Loaded,
) -> None:
    changes = whole(cold_restart)
    restarts = [c for c in changes if c.kind == "restart"]
    hit = affected(cold_restart)
    assert sorted(c.instance for c in restarts) == sorted(hit)
    window = cold_restart.manifest["window"]
    # The rollout goes replica by replica, a third of the window apart.
    stagger = (window["end_offset_s"] - window["start_offset_s"]) / (len(hit) + 1)
    for j, change in enumerate(sorted(restarts, key=lambda c: c.instance)):
        crashed = window["start"] + j * stagger
        # Dated by the new process' start: after the crash, once the weights loaded.
        assert crashed <= unix(change) <= crashed + 180, change
        assert "process_start_time_seconds" in change.description
        assert "reset" in change.description
        assert "answered scrapes again" in change.description
    downs = [c for c in changes if c.kind == "replicas"]
    assert sorted(c.instance for c in downs) == sorted(hit)
    assert all("2 -> 1 of 2 engine replicas" in c.description for c in downs)
    assert not [c for c in changes if c.kind in ("dialect", "cache_config", "unknown")]


@pytest.mark.django_db
def test_a_window_before_the_rollout_sees_none_of_it(cold_restart: Loaded) -> None:
    start = cold_restart.manifest["window"]["start"]
    assert (
        changes_in(
            cold_restart.fleet, model_name=MODEL, start=utc(start - 600), end=utc(start - 30)
        )
        == ()
    )


@pytest.mark.django_db
def test_a_rollback_shows_as_a_dialect_change_on_the_rolled_back_replica(
    version_skew: Loaded,
) -> None:
    [(instance, replica)] = affected(version_skew).items()
    changes = whole(version_skew)
    dialects = [c for c in changes if c.kind == "dialect"]
    at = version_skew.manifest["window"]["start"]
    assert [c.instance for c in dialects] == [instance, instance]
    rolled_back, restored = dialects
    assert rolled_back.description.startswith(
        f"vLLM dialect {replica['dialect']} -> {replica['incident_dialect']}"
    )
    assert restored.description.startswith(
        f"vLLM dialect {replica['incident_dialect']} -> {replica['dialect']}"
    )
    assert at < unix(rolled_back) <= at + 180
    assert unix(rolled_back) < unix(restored)
    # Each process change is a restart too; the replicas not rolled back changed nothing.
    assert {c.instance for c in changes} == {instance}
    assert len([c for c in changes if c.kind == "restart"]) == 2


@pytest.mark.django_db
def test_a_dead_replica_shows_as_fewer_replicas_then_a_restart(replica_down: Loaded) -> None:
    [instance] = affected(replica_down)
    window = replica_down.manifest["window"]
    changes = whole(replica_down, model_name=None)
    assert [(c.kind, c.instance) for c in changes] == [
        ("replicas", instance),
        ("restart", instance),
    ]
    down, back = changes
    assert window["start"] <= unix(down) <= window["start"] + STEP
    assert "3 -> 2 of 3 engine replicas answering" in down.description
    assert window["end"] <= unix(back) <= window["end"] + STEP
    assert "answered scrapes again after" in back.description


@pytest.mark.django_db
def test_a_window_ending_while_it_is_down_says_so(replica_down: Loaded) -> None:
    [instance] = affected(replica_down)
    window = replica_down.manifest["window"]
    changes = changes_in(
        replica_down.fleet, model_name=MODEL, start=utc(window["start"] - 300),
        end=utc(window["start"] + 120),
    )  # fmt: skip
    assert [(c.kind, c.instance) for c in changes] == [
        ("replicas", instance),
        ("replicas", instance),
    ]
    assert "still down at the window's end" in changes[1].description


@pytest.mark.django_db
def test_changes_serialise_for_the_walk(cold_restart: Loaded) -> None:
    for change in whole(cold_restart):
        found = change.to_dict()
        assert set(found) == {"kind", "at", "instance", "description"}
        assert found["at"].endswith("Z")
