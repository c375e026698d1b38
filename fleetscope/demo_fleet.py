"""The simulated fleet `make demo` runs behind the dashboard.

The demo does not start empty: before it serves, the fleet's last few hours
(FLEETSCOPE_DEMO_HISTORY_HOURS, 6 by default, 0 for none) are simulated and
loaded into the store through `history_import`, as if FleetScope had been
scraping all along. The live fleet is that same simulation going on from
there, on the same endpoints, so every series joins and no counter resets at
the seam. The incident happens at a known time inside the default one-hour view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from fleetscope.demo_audit import demo_audit_seed
from fleetscope.demo_reviews import demo_reviews_seed
from fleetscope.env import Env
from fleetsim.api import Fleet as SimFleet
from fleetsim.api import continue_fleet, start_fleet
from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet
from inventory.registration import targets_import
from inventory.targets import TargetSpec

DEMO_FLEET_SLUG = "demo"
DEMO_FLEET_NAME = "Demo fleet (simulated)"
DEMO_REPLICAS = 4
# KV pressure: queue and TTFT climb, preemptions start, on-call has a case.
DEMO_SCENARIO = "kv-pressure"
# Without history: a few minutes after start-up.
DEMO_INCIDENT_AT_SECONDS = 180.0
DEMO_HISTORY_HOURS = 6.0
# With history: this long before start-up, so the default one-hour view shows it and after.
DEMO_INCIDENT_BEFORE_END_SECONDS = 20 * 60.0
# Two samples in every 60 s rate window the charts use (a 15 s live interval costs 4x more).
HISTORY_STEP_SECONDS = 30.0
# The history is simulated, written and imported in parts of this many steps (30 min).
HISTORY_PART_STEPS = 60

Say = Callable[[str], None]


@dataclass(frozen=True)
class DemoFleet:
    sim: SimFleet
    summary: str


def demo_history_hours() -> float:
    return Env().float("FLEETSCOPE_DEMO_HISTORY_HOURS", DEMO_HISTORY_HOURS, minimum=0.0)


def demo_fleet_start(
    *,
    seed: int = 0,
    history_hours: float | None = None,
    replicas: int = DEMO_REPLICAS,
    say: Say | None = None,
) -> DemoFleet:
    """Start fleetsim in this process and make the `demo` fleet exactly its targets, after
    filling the store with its last `history_hours` (FLEETSCOPE_DEMO_HISTORY_HOURS)."""
    hours = demo_history_hours() if history_hours is None else history_hours
    if hours > 0:
        return _with_history(seed=seed, hours=hours, replicas=replicas, say=say or _quiet)
    sim = start_fleet(
        replicas=replicas, scenario=DEMO_SCENARIO, at=DEMO_INCIDENT_AT_SECONDS, seed=seed
    )
    try:
        _register(sim)
        _reviews_seed(sim)
    except BaseException:
        sim.stop()
        raise
    summary = (
        f"demo fleet: {replicas} simulated vLLM replicas ({len(sim.targets)} endpoints); "
        f"'{DEMO_SCENARIO}' starts about {DEMO_INCIDENT_AT_SECONDS / 60:.0f} min in "
        f"on replica {_affected(sim)}"
    )
    return DemoFleet(sim, summary)


def _reviews_seed(sim: SimFleet) -> None:
    fleet = Fleet.objects.get(slug=DEMO_FLEET_SLUG)
    demo_reviews_seed(fleet, sim.model.configs)
    demo_audit_seed(fleet)


def _quiet(line: str) -> None:
    return None


def _register(sim: SimFleet) -> None:
    specs = [TargetSpec(t.url, t.kind, dict(t.labels)) for t in sim.targets]
    targets_import(fleet_slug=DEMO_FLEET_SLUG, fleet_name=DEMO_FLEET_NAME, specs=specs, prune=True)


def _affected(sim: SimFleet) -> str:
    affected = sim.manifest.get("affected_replicas", [])
    return ", ".join(str(r.get("index")) for r in affected) or "all"


def _with_history(*, seed: int, hours: float, replicas: int, say: Say) -> DemoFleet:
    started = time.monotonic()
    span = hours * 3600.0
    at = max(0.0, span - DEMO_INCIDENT_BEFORE_END_SECONDS)
    history = History(replicas=replicas, scenario=DEMO_SCENARIO, hours=hours,
                      step=HISTORY_STEP_SECONDS, at=at, seed=seed)  # fmt: skip
    sim = continue_fleet(history)
    path = Path(settings.VAR_DIR) / "demo-history.om"
    try:
        # Every start simulates the fleet anew: the demo fleet's stored scrapes go first.
        stale = Fleet.objects.filter(slug=DEMO_FLEET_SLUG).first()
        if stale is not None:
            stale.endpoints.all().delete()
        _register(sim)
        _fill(history, path, hours=hours, say=say)
        # Writing took a while: the steps up to now, so the live scrapes follow without a gap.
        history.extend_to(time.time())
        if not history.done:
            history.write_openmetrics(path)
            history_import(fleet_slug=DEMO_FLEET_SLUG, path=path)
        _reviews_seed(sim)
        sim.serve()
    except BaseException:
        sim.stop()
        raise
    finally:
        path.unlink(missing_ok=True)
    incident = history.start + at
    minutes = (time.time() - incident) / 60
    summary = (
        f"demo fleet: {replicas} simulated vLLM replicas ({len(sim.targets)} endpoints), "
        f"{_hours(hours)} of history filled in {time.monotonic() - started:.0f} s; "
        f"'{DEMO_SCENARIO}' on replica {_affected(sim)} from {_clock(incident)} to "
        f"{_clock(history.start + history.truth['window']['end_offset_s'])} UTC "
        f"(began {minutes:.0f} min ago)"
    )
    return DemoFleet(sim, summary)


def _fill(history: History, path: Path, *, hours: float, say: Say) -> None:
    """Simulate, write and import the history in parts, saying how long the rest takes."""
    started = time.monotonic()
    total = history.steps + 1
    said_estimate = False
    next_report = started + 10.0
    say(
        f"demo: simulating the fleet's last {_hours(hours)} into the store before serving "
        "(FLEETSCOPE_DEMO_HISTORY_HOURS=0 skips it)"
    )
    while not history.done:
        history.write_openmetrics(path, steps=HISTORY_PART_STEPS)
        history_import(fleet_slug=DEMO_FLEET_SLUG, path=path)
        now = time.monotonic()
        done = history.next_step
        left = (now - started) / done * (total - done)
        if not said_estimate:
            say(f"demo: {_hours(hours)} of history takes about {now - started + left:.0f} s")
            said_estimate = True
        elif now >= next_report and not history.done:
            say(f"demo: history {100 * done / total:.0f}% filled, about {left:.0f} s left")
            next_report = now + 10.0
    say(f"demo: history filled in {time.monotonic() - started:.0f} s; starting the fleet")


def _hours(hours: float) -> str:
    return f"{hours:g} h"


def _clock(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%H:%M")
