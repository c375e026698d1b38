"""fleetsim speed: serving 16 replicas in real time, and writing history for 8.

    .venv/bin/python benchmarks/fleetsim.py [--serve-seconds 30] [--history-hours 0.5]

Serve: a child process runs `start_fleet(replicas=16)` while this process scrapes
every target every few seconds (more often than Prometheus' default 15 s), next to
an idle child that imported the same modules. Both children's CPU time comes from
/proc, so the printed share is CPU seconds per wall second (goal: under 0.5).

History: the same fleet simulated with and without writing OpenMetrics, median of
a few runs, as simulated seconds per wall second (goal: 200x real time or more).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
# This script is itself named fleetsim.py: put the package ahead of the script's folder.
sys.path.insert(0, str(ROOT))

SERVE_CHILD = """
import json, sys
from fleetsim.api import start_fleet
fleet = start_fleet(replicas=16, base_port=0, speed=1.0)
print(json.dumps([[t.kind, t.url] for t in fleet.targets]), flush=True)
sys.stdin.read()
fleet.stop()
"""
IDLE_CHILD = """
import sys
import fleetsim.api
print("[]", flush=True)
sys.stdin.read()
"""
SERVE_GOAL_CORES = 0.5
HISTORY_GOAL_X = 200.0
END = 1_767_225_600.0 + 14 * 3600


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spawn(code: str) -> tuple[subprocess.Popen[str], list[list[str]]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def bench_serve(seconds: float, interval: float) -> None:
    fleet, targets = spawn(SERVE_CHILD)
    idle, _ = spawn(IDLE_CHILD)
    latency: dict[str, list[float]] = {}
    try:
        with httpx.Client(timeout=10) as client, ThreadPoolExecutor(8) as pool:

            def scrape(target: list[str]) -> None:
                t0 = time.perf_counter()
                client.get(target[1]).raise_for_status()
                latency.setdefault(target[0], []).append(time.perf_counter() - t0)

            list(pool.map(scrape, targets))  # first scrape warms the renderers up
            latency.clear()
            start = time.monotonic()
            cpu0 = {p.pid: cpu_seconds(p.pid) for p in (fleet, idle)}
            rounds = 0
            while time.monotonic() - start < seconds:
                tick = time.monotonic()
                list(pool.map(scrape, targets))
                rounds += 1
                time.sleep(max(0.0, interval - (time.monotonic() - tick)))
            wall = time.monotonic() - start
            used = {p.pid: cpu_seconds(p.pid) - cpu0[p.pid] for p in (fleet, idle)}
    finally:
        for proc in (fleet, idle):
            proc.communicate(input="", timeout=30)
    share, base = used[fleet.pid] / wall, used[idle.pid] / wall
    print(f"serve: 16 replicas in real time, {len(targets)} targets scraped every "
          f"{interval:g} s, {rounds} rounds in {wall:.0f} s")  # fmt: skip
    print(f"  fleet process      {share:.3f} CPU-s per wall-s")
    print(f"  idle baseline      {base:.3f} CPU-s per wall-s")
    net = share - base
    verdict = "meets" if net < SERVE_GOAL_CORES else "MISSES"
    print(f"  fleet minus idle   {net:.3f} cores  ({verdict} the goal of < {SERVE_GOAL_CORES}; "
          f"{SERVE_GOAL_CORES / max(net, 1e-6):.1f}x headroom)")  # fmt: skip
    medians = ", ".join(
        f"{kind} {statistics.median(v) * 1000:.1f} ms" for kind, v in sorted(latency.items())
    )
    print(f"  median scrape latency: {medians}")


def bench_history(hours: float, repeats: int) -> None:
    from fleetsim.fleet import FleetModel
    from fleetsim.history import History

    span = hours * 3600
    simulate, write, sizes = [], [], []
    for seed in range(repeats):
        model = FleetModel(replicas=8, seed=seed, epoch=END - span)
        t0 = time.perf_counter()
        model.advance_to(span)
        simulate.append(span / (time.perf_counter() - t0))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "history.om"
            t0 = time.perf_counter()
            History(replicas=8, hours=hours, seed=seed, end=END).write_openmetrics(out)
            write.append(span / (time.perf_counter() - t0))
            sizes.append(out.stat().st_size / hours / 1e6)
    sim, full = statistics.median(simulate), statistics.median(write)
    print(f"history: 8 replicas, {hours:g} h at 15 s steps, median of {repeats}")
    print(f"  simulation alone        {sim:7.0f} x real time")
    verdict = "meets" if full >= HISTORY_GOAL_X else "MISSES"
    print(f"  simulation + OpenMetrics {full:6.0f} x real time  ({verdict} the goal of "
          f">= {HISTORY_GOAL_X:g}x; {full / HISTORY_GOAL_X:.1f}x the goal)")  # fmt: skip
    print(f"  writing costs {100 * (1 - full / sim):.0f}% of the time; "
          f"{statistics.median(sizes):.0f} MB of OpenMetrics per simulated hour")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve-seconds", type=float, default=30.0)
    parser.add_argument("--scrape-interval", type=float, default=5.0)
    parser.add_argument("--history-hours", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"fleetsim benchmark: {os.cpu_count()} CPUs, Python {platform.python_version()}")
    bench_serve(args.serve_seconds, args.scrape_interval)
    bench_history(args.history_hours, args.repeats)


if __name__ == "__main__":
    main()
