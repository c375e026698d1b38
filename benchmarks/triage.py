"""A full triage walk over a 32-replica fleet, on the embedded store and on Prometheus.

    .venv/bin/python benchmarks/triage.py [--replicas 32] [--runs 5] [--database-url URL]

One fleetsim history (gpu-throttle on replica 0, 20 minutes of baseline, the 15-minute
incident) is loaded into the embedded store through `history_import` and backfilled into
a real Prometheus by promtool. Then `walk_fleet` runs over the incident window:

- embedded: every spec evaluated from one read of the store;
- Prometheus: the same specs as PromQL, sent 8 at a time; every request is counted
  (method and path, through the outbound guard's observers);
- baseline: the same walk with one `run_queries` call per statistic, as a tree whose
  nodes each fetched their own evidence would (on Prometheus).

Printed: medians of `--runs`, the ratio to the baseline, the number of Prometheus
requests, and whether the walk found the manifest's branch. Goal: under 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.overview import setup_django  # noqa: E402
from fleetsim.history import History  # noqa: E402

GOAL_SECONDS = 2.0
BASELINE_SECONDS = 1200.0


def timed(runs: int, call: Any) -> tuple[float, Any]:
    seconds, last = [], None
    for _ in range(runs):
        start = time.perf_counter()
        last = call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fleetscope-triage-bench-"))
    setup_django(work, args.database_url, None)
    from django.test import override_settings

    from devtools.prometheus import backfilled_prometheus
    from inventory import scraping
    from inventory.history import history_import
    from queries import Backend
    from triage.walk import evidence as evidence_module
    from triage.walk import walk_fleet

    end = time.time() // 30 * 30 - 3600
    history = History(
        replicas=args.replicas,
        scenario="gpu-throttle",
        step=30.0,
        hours=(BASELINE_SECONDS + 900) / 3600,
        at=BASELINE_SECONDS,
        end=end,
    )
    path = work / "fleet.om"
    history.write_openmetrics(path)
    fleet = history_import(fleet_slug="bench-triage", path=path).fleet
    manifest = history.manifest
    at = datetime.fromtimestamp(
        min(history.start + manifest["window"]["end_offset_s"], history.end), UTC
    )
    since = timedelta(seconds=900)
    expected = manifest["expected_triage_branch"]

    def walk(backend: Backend) -> Any:
        return walk_fleet(fleet, at=at, since=since, backend=backend)

    local_s, local_walk = timed(args.runs, lambda: walk("local"))
    print(f"replicas {args.replicas}, window 900 s, baseline {BASELINE_SECONDS:.0f} s")
    print(
        f"embedded store: {local_s:.3f} s median of {args.runs}, {local_walk.queries} specs, "
        f"supported {list(local_walk.supported)} (expected {expected})"
    )
    with backfilled_prometheus(path, work) as url, override_settings(PROMETHEUS_URL=url):
        seen: list[tuple[str, str]] = []
        scraping.REQUEST_OBSERVERS.append(lambda method, u: seen.append((method, u)))
        try:
            prom_s, prom_walk = timed(args.runs, lambda: walk("prometheus"))
            per_walk = len(seen) // args.runs
            kinds = Counter((m, urlsplit(u).path) for m, u in seen)
            original = evidence_module.run_queries

            def one_by_one(specs: Any, **kw: Any) -> Any:
                windows = kw.pop("windows", None) or {}
                return {
                    name: original(
                        {name: spec},
                        **kw,
                        windows={name: windows[name]} if name in windows else None,
                    )[name]
                    for name, spec in specs.items()
                }

            evidence_module.run_queries = one_by_one
            try:
                base_s, _ = timed(max(1, args.runs // 2), lambda: walk("prometheus"))
            finally:
                evidence_module.run_queries = original
        finally:
            scraping.REQUEST_OBSERVERS.pop()
    print(
        f"Prometheus:     {prom_s:.3f} s median of {args.runs}, {per_walk} requests per walk "
        f"({', '.join(f'{n} {m} {p}' for (m, p), n in sorted(kinds.items()))} over all runs), "
        f"supported {list(prom_walk.supported)}"
    )
    print(
        f"baseline (one round-trip per statistic, Prometheus): {base_s:.3f} s; "
        f"ratio {base_s / prom_s:.1f}x"
    )
    worst = max(local_s, prom_s)
    print(
        f"goal under {GOAL_SECONDS:g} s: {'met' if worst < GOAL_SECONDS else 'NOT met'} "
        f"(slowest backend {worst:.3f} s)"
    )


if __name__ == "__main__":
    main()
