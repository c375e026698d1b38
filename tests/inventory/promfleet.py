"""A real Prometheus scraping a fleetsim fleet, for the tests of target discovery."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from fleetsim.targets import file_sd


@dataclass(frozen=True)
class PrometheusOverFleet:
    url: str
    sim: SimFleet
    # Targets Prometheus lists besides the fleet's own (see `extra_targets`).
    extra: tuple[str, ...]


@contextmanager
def prometheus_over_fleet(
    base: Path, *, replicas: int = 1, seed: int = 0, extra_targets: tuple[str, ...] = ()
) -> Iterator[PrometheusOverFleet]:
    """Prometheus with the fleet's file_sd (plus `extra_targets`, host:port each, in a job of
    their own), yielded once its target list holds every one of them."""
    with start_fleet(replicas=replicas, seed=seed) as sim:
        groups: list[dict[str, Any]] = file_sd(sim.targets)
        if extra_targets:
            groups.append({"targets": list(extra_targets), "labels": {"job": "elsewhere"}})
        config = file_sd_config(base, groups)
        with running_prometheus(config, base / "data") as url:
            expected = len(sim.targets) + len(extra_targets)

            def listed() -> bool | None:
                answer = httpx.get(f"{url}/api/v1/targets", params={"state": "active"}, timeout=5)
                return len(answer.json()["data"]["activeTargets"]) == expected or None

            wait_until(listed, timeout=30, what="prometheus to list every target")
            yield PrometheusOverFleet(url, sim, extra_targets)
