"""SLO status for 20 SLOs over a 32-replica fleet, on both backends, in one run.

    .venv/bin/python benchmarks/slo.py [--replicas 32] [--hours 2] [--slos 20] [--runs 5]

One fleetsim history (simulated time, 15 s steps) is loaded into the embedded store by
`import_history` and into Prometheus by `promtool tsdb create-blocks-from openmetrics`
(as benchmarks/overview.py does). Then `slo_statuses` (what `manage.py slo_status` and
the SLO list run) evaluates every SLO of the fleet at the end of the history:

- FleetScope: one batch of queries per selector for all the fleet's SLOs (sources shared).
- Baseline: each SLO evaluated on its own (`slo_status` per SLO), as a per-SLO
  recording-rule set or a tile-per-SLO dashboard reads it.

Printed: median seconds of each on the local store and on Prometheus, their ratio, and
the Prometheus queries each sends (from Prometheus' own counters) for half and all of
the SLOs: queries follow the SLOs' distinct sources, selectors and windows, and a query
names its replicas in one `instance=~` matcher, so their number never enters. Goal:
under 1 s locally for 20 SLOs.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.overview import prometheus_on, query_count, setup_django  # noqa: E402
from benchmarks.overview_fill import fill, log  # noqa: E402

GOAL_LOCAL_SECONDS = 1.0
# (kind, threshold seconds or None, target): presets and their common variations.
SHAPES = (
    (("ttft", 0.2, 0.99), ("itl", 0.05, 0.99)),
    (("e2e", 3.0, 0.99),),
    (("e2e", 2.0, 0.99),),
    (("ttft", 0.6, 0.99), ("itl", 0.2, 0.99)),
    (("success", None, 0.99),),
    (("ttft", 0.3, 0.95), ("tpot", 0.1, 0.99), ("success", None, 0.999)),
    (("ttft", 1.0, 0.999),),
    (("e2e", 10.0, 0.9), ("success", None, 0.99)),
)


def make_slos(fleet: Any, count: int, instances: list[str]) -> None:
    from slo.models import Objective, Slo

    for i in range(count):
        # Every fourth SLO covers half the replicas: a second selector, a second batch.
        chosen = sorted(instances[: len(instances) // 2]) if i % 4 == 3 else []
        slo = Slo.objects.create(fleet=fleet, slug=f"slo-{i}", name=f"SLO {i}",
                                 window_days=(28, 7, 30)[i % 3], instances=chosen)  # fmt: skip
        for kind, threshold, target in SHAPES[i % len(SHAPES)]:
            Objective.objects.create(slo=slo, kind=kind, threshold_seconds=threshold,
                                     target=target)  # fmt: skip


def timed(fn: Any, runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=32)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--slos", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="fleetscope-bench-slo-"))
    setup_django(workdir / "var", None, None)
    from django.test import override_settings

    from queries import Backend
    from slo.evaluation import slo_status, slo_statuses
    from slo.models import Slo

    try:
        openmetrics = workdir / "history.om"
        fleet, end = fill(args.replicas, args.hours, openmetrics)
        at = end.astimezone(UTC)
        instances = sorted(e.url.split("/")[2] for e in fleet.endpoints.filter(kind="vllm"))
        make_slos(fleet, args.slos, instances)
        slos = list(Slo.objects.filter(fleet=fleet).prefetch_related("objectives"))
        half = slos[: len(slos) // 2]
        print(f"fleet: {args.replicas} replicas x {args.hours:g} h at 15 s; {len(slos)} SLOs "
              f"({sum(s.objectives.count() for s in slos)} objectives)")  # fmt: skip

        def ours(backend: Backend, chosen: list[Any]) -> Any:
            return lambda: slo_statuses(fleet, backend=backend, at=at, slos=chosen)

        def baseline(backend: Backend, chosen: list[Any]) -> Any:
            return lambda: [slo_status(slo, backend=backend, at=at) for slo in chosen]

        cold, _ = timed(ours("local", slos), 1)
        local, statuses = timed(ours("local", slos), args.runs)
        local_base, _ = timed(baseline("local", slos), max(1, args.runs // 2))
        print("\nlocal store (embedded default)")
        print(f"   fleetscope slo_statuses, {len(slos)} SLOs: p50 {local * 1000:.0f} ms "
              f"(first, cold caches: {cold * 1000:.0f} ms)   (goal < "
              f"{GOAL_LOCAL_SECONDS * 1000:.0f} ms)")  # fmt: skip
        print(f"   baseline, one SLO at a time: p50 {local_base * 1000:.0f} ms; ratio "
              f"{local_base / local:.1f}x")  # fmt: skip
        states = [s.state for s in statuses]
        print(f"   states: {', '.join(f'{k} {states.count(k)}' for k in sorted(set(states)))}")
        with prometheus_on(openmetrics, workdir) as url, override_settings(
            PROMETHEUS_URL=url, PROMETHEUS_TIMEOUT_SECONDS=60.0
        ):  # fmt: skip
            print("\nprometheus (backfilled blocks)")
            counts = {}
            for name, fn in (
                ("fleetscope, all SLOs", ours("prometheus", slos)),
                ("fleetscope, half the SLOs", ours("prometheus", half)),
                ("baseline, one SLO at a time", baseline("prometheus", slos)),
            ):
                before = query_count(url)
                fn()
                time.sleep(0.3)  # Prometheus counts a request after answering it
                counts[name] = query_count(url) - before
            remote, _ = timed(ours("prometheus", slos), args.runs)
            remote_base, _ = timed(baseline("prometheus", slos), max(1, args.runs // 2))
            print(f"   fleetscope slo_statuses: p50 {remote * 1000:.0f} ms; baseline one SLO at "
                  f"a time: p50 {remote_base * 1000:.0f} ms; ratio "
                  f"{remote_base / remote:.1f}x")  # fmt: skip
            for name, count in counts.items():
                print(f"   queries, {name}: {count:.0f}")
        fleet.delete()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        log("done")


if __name__ == "__main__":
    main()
