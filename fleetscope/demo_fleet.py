"""The simulated fleet `make demo` runs behind the dashboard."""

from __future__ import annotations

from dataclasses import dataclass

from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from inventory.registration import targets_import
from inventory.targets import TargetSpec

DEMO_FLEET_SLUG = "demo"
DEMO_REPLICAS = 4
# KV pressure a few minutes in: queue and TTFT climb, preemptions start, on-call has a case.
DEMO_SCENARIO = "kv-pressure"
DEMO_INCIDENT_AT_SECONDS = 180.0


@dataclass(frozen=True)
class DemoFleet:
    sim: SimFleet
    summary: str


def demo_fleet_start(*, seed: int = 0) -> DemoFleet:
    """Start fleetsim in this process and make the `demo` fleet exactly its targets."""
    sim = start_fleet(
        replicas=DEMO_REPLICAS,
        scenario=DEMO_SCENARIO,
        at=DEMO_INCIDENT_AT_SECONDS,
        seed=seed,
    )
    try:
        specs = [TargetSpec(t.url, t.kind, dict(t.labels)) for t in sim.targets]
        targets_import(
            fleet_slug=DEMO_FLEET_SLUG, fleet_name="Demo fleet (simulated)", specs=specs, prune=True
        )
    except BaseException:
        sim.stop()
        raise
    affected = [str(r.get("index")) for r in sim.manifest.get("affected_replicas", [])]
    summary = (
        f"demo fleet: {DEMO_REPLICAS} simulated vLLM replicas ({len(sim.targets)} endpoints); "
        f"'{DEMO_SCENARIO}' starts about {DEMO_INCIDENT_AT_SECONDS / 60:.0f} min in "
        f"on replica {', '.join(affected) or 'all'}"
    )
    return DemoFleet(sim, summary)
