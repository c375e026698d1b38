"""Filling the embedded store from a fleetsim history, for benchmarks/overview.py.

The history is written as OpenMetrics (`History.write_openmetrics`, what `fleetsim
history` writes) and loaded through the front door, `inventory.history.history_import`
(what `manage.py import_history` runs): each timestamp lands as a live scrape cycle does,
through `inventory.services.cycle_record`, with every layout and its inventory from a
strict parse of what the endpoint served. The same file then feeds promtool for the
Prometheus side.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from fleetsim.history import History

STEP_SECONDS = 15.0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fill(replicas: int, hours: float, openmetrics: Path | None) -> tuple[Any, datetime]:
    """Simulate `replicas` x `hours`, write the history to `openmetrics` (a temporary file
    when None, removed after) and import it into a new fleet; (fleet, last scrape time)."""
    from inventory.history import history_import

    started = time.perf_counter()
    history = History(replicas=replicas, hours=hours, step=STEP_SECONDS)
    if openmetrics is None:
        handle, name = tempfile.mkstemp(prefix="fleetscope-history-", suffix=".om")
        os.close(handle)
        path = Path(name)
    else:
        path = openmetrics
    try:
        history.write_openmetrics(path)
        log(
            f"history: {len(history.targets)} targets x {history.steps + 1} cycles simulated "
            f"and written in {time.perf_counter() - started:.0f} s "
            f"({path.stat().st_size / 1e9:.1f} GB)"
        )
        started = time.perf_counter()
        report = history_import(fleet_slug=f"bench-{os.getpid()}", path=path)
        log(
            f"import_history: {report.scrapes} scrapes ({report.lines / 1e6:.1f}M lines) in "
            f"{time.perf_counter() - started:.0f} s ({report.parses} layouts parsed)"
        )
    finally:
        if openmetrics is None:
            path.unlink(missing_ok=True)
    return report.fleet, report.end
