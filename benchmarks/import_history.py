"""import_history: a fleetsim history loaded into the embedded store, against a baseline.

    .venv/bin/python benchmarks/import_history.py [--replicas 12] [--hours 1] [--runs 3]
        [--baseline-runs 1] [--database-url postgres://...]

One history (fleetsim, 15 s steps, ending now) is written once as OpenMetrics. Each run
imports it into an empty database (a fresh SQLite file, or the given PostgreSQL
database emptied) in a process of its own, as `manage.py import_history` does:
`inventory.history.history_import`, which parses each layout once and writes every
other scrape of it by its values.
Baseline: the same import parsing every scrape in full, as a live scrape is parsed
(`parse_every_scrape=True`: each scrape rebuilt as the text its endpoint served and
read by the strict parser with the endpoint's warm LabelCache).
Goal: a 1-hour, 12-replica history in under a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # benchmarks/fleetsim.py would shadow the fleetsim package

GOAL_SECONDS = 60.0


def setup_django(var_dir: Path, database_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleetscope.settings"
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ["FLEETSCOPE_VAR_DIR"] = str(var_dir)
    os.environ["FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK"] = "true"  # fleetsim's targets
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def child(args: argparse.Namespace) -> None:
    """One timed import, in a process of its own, into an empty database."""
    setup_django(Path(args.var_dir), args.database_url)
    from inventory.history import history_import, history_read
    from inventory.models import Fleet

    Fleet.objects.all().delete()  # PostgreSQL: the given database, emptied
    started = time.perf_counter()
    content = history_read(args.file, parse_every_scrape=args.baseline)
    read_seconds = time.perf_counter() - started
    del content
    started = time.perf_counter()
    report = history_import(
        fleet_slug="bench-import", path=args.file, parse_every_scrape=args.baseline
    )
    seconds = time.perf_counter() - started
    report.fleet.delete()
    print(json.dumps({
        "seconds": seconds, "read_seconds": read_seconds, "scrapes": report.scrapes,
        "failed": report.failed, "parses": report.parses, "lines": report.lines,
        "cycles": report.cycles, "samples": report.samples, "frames": report.frames_written,
    }))  # fmt: skip


def timed_runs(args: argparse.Namespace, path: Path, workdir: Path, *, baseline: bool,
               runs: int) -> list[dict[str, float]]:  # fmt: skip
    results = []
    for run in range(runs):
        var_dir = workdir / f"var-{'baseline' if baseline else 'import'}-{run}"
        command = [sys.executable, __file__, "--child", "--file", str(path),
                   "--var-dir", str(var_dir)]  # fmt: skip
        if args.database_url:
            command += ["--database-url", args.database_url]
        if baseline:
            command.append("--baseline")
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        shutil.rmtree(var_dir, ignore_errors=True)
        label = "baseline" if baseline else "import_history"
        print(f"   {label} run {run + 1}: {results[-1]['seconds']:.1f} s", file=sys.stderr)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=12)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-runs", type=int, default=1)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: SQLite)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--var-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    from fleetsim.history import History

    workdir = Path(tempfile.mkdtemp(prefix="fleetscope-bench-import-"))
    try:
        path = workdir / "history.om"
        started = time.perf_counter()
        history = History(replicas=args.replicas, hours=args.hours, step=15.0)
        history.write_openmetrics(path)
        generated = time.perf_counter() - started
        ours = timed_runs(args, path, workdir, baseline=False, runs=args.runs)
        base = timed_runs(args, path, workdir, baseline=True, runs=args.baseline_runs)
        first = ours[0]
        database = "PostgreSQL" if args.database_url else "SQLite"
        print(
            f"history: {args.replicas} replicas (+ DCGM, gateway, prober: "
            f"{len(history.targets)} targets) x {args.hours:g} h at 15 s: "
            f"{first['cycles']:.0f} cycles, {first['scrapes']:.0f} scrapes "
            f"({first['failed']:.0f} failed), {first['lines'] / 1e6:.2f}M lines, "
            f"{path.stat().st_size / 1e6:.0f} MB (simulated and written in {generated:.0f} s)"
        )
        median = statistics.median(r["seconds"] for r in ours)
        each = ", ".join(f"{r['seconds']:.1f}" for r in ours)
        verdict = "met" if median < GOAL_SECONDS else "NOT met"
        print(
            f"import_history, median of {len(ours)} runs, a fresh {database} database each: "
            f"{median:.1f} s ({each}) on "
            f"{os.cpu_count()} cores   (goal: < {GOAL_SECONDS:.0f} s: {verdict})"
        )
        print(
            f"   of which reading and checking the file (history_read alone): "
            f"{statistics.median(r['read_seconds'] for r in ours):.1f} s; "
            f"{first['parses']:.0f} layouts parsed in full, "
            f"{first['scrapes'] / median:.0f} scrapes/s, "
            f"{first['lines'] / median / 1e3:.0f}k lines/s"
        )
        base_median = statistics.median(r["seconds"] for r in base)
        print(
            f"baseline, every scrape parsed in full as a live scrape is, median of {len(base)}: "
            f"{base_median:.1f} s ({base[0]['parses']:.0f} parses)"
        )
        print(f"speed-up: {base_median / median:.1f}x")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
