"""The load benchmark's figures: each run's, their medians, and the printed table with
its goals."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

import numpy as np

from benchmarks.loadrun.measured import Run

GOAL_P99_SECONDS = 0.5


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


@dataclass
class Figures:
    """One run's printed figures."""

    requests_per_second: float
    loads: int
    load_p50: float
    load_p99: float
    html_p50: float
    html_p99: float
    json_p50: float
    json_p99: float
    handshake_p50: float
    handshake_p99: float
    probe_p50: float
    probe_max: float
    errors: int
    pushes: float  # per client per interval, the lowest client's
    queries: float
    publish_seconds: float


def figures(run: Run) -> Figures:
    t = run.tally
    return Figures(
        requests_per_second=run.requests / run.seconds,
        loads=len(t.loads),
        load_p50=ms(t.loads, 50),
        load_p99=ms(t.loads, 99),
        html_p50=ms(t.html, 50),
        html_p99=ms(t.html, 99),
        json_p50=ms(t.json, 50),
        json_p99=ms(t.json, 99),
        handshake_p50=ms(t.handshakes, 50),
        handshake_p99=ms(t.handshakes, 99),
        probe_p50=ms(t.probes, 50),
        probe_max=ms(t.probes, 100),
        errors=sum(t.errors.values()),
        pushes=min(run.pushes_per_interval, default=float("nan")),
        queries=run.queries_per_interval,
        publish_seconds=statistics.median(p["seconds"] for p in run.publishes),
    )


def median_figures(runs: list[Run]) -> Figures:
    each = [figures(r) for r in runs]
    return Figures(**{
        name: statistics.median(getattr(f, name) for f in each)
        for name in Figures.__dataclass_fields__
    })  # fmt: skip


def report(one: list[Run], many: list[Run], think: float) -> None:
    a, b = median_figures(one), median_figures(many)
    n = many[0]
    last = n.publishes[-1]
    print(
        f"\n{len(one)} run(s) each; {n.intervals} live intervals measured per run "
        f"({n.seconds:.0f} s); think time {think:g} s (0.5-1.5x); pushed overview "
        f"{last['bytes'] / 1e6:.2f} MB ({last['gzip_bytes'] / 1e6:.2f} MB gzip), "
        f"{last['drawn']}/{last['panels']} panels drawn"
    )
    rows = [
        ("viewers / websocket clients", f"{one[0].viewers} / {one[0].sockets}",
         f"{n.viewers} / {n.sockets}"),
        ("page loads measured", f"{a.loads:.0f}", f"{b.loads:.0f}"),
        ("requests/s (HTML + JSON)", f"{a.requests_per_second:.1f}",
         f"{b.requests_per_second:.1f}"),
        ("page load p50 / p99, ms", f"{a.load_p50:.0f} / {a.load_p99:.0f}",
         f"{b.load_p50:.0f} / {b.load_p99:.0f}"),
        ("  HTML p50 / p99, ms", f"{a.html_p50:.0f} / {a.html_p99:.0f}",
         f"{b.html_p50:.0f} / {b.html_p99:.0f}"),
        ("  overview.json p50 / p99, ms", f"{a.json_p50:.0f} / {a.json_p99:.0f}",
         f"{b.json_p50:.0f} / {b.json_p99:.0f}"),
        ("websocket handshake p50 / p99, ms", f"{a.handshake_p50:.0f} / {a.handshake_p99:.0f}",
         f"{b.handshake_p50:.0f} / {b.handshake_p99:.0f}"),
        ("/healthz every 0.1 s: p50 / max, ms", f"{a.probe_p50:.0f} / {a.probe_max:.0f}",
         f"{b.probe_p50:.0f} / {b.probe_max:.0f}"),
        ("errors", f"{a.errors:.0f}", f"{b.errors:.0f}"),
        ("pushes per client per interval (lowest)", f"{a.pushes:.2f}", f"{b.pushes:.2f}"),
        ("live computation (publisher), s", f"{a.publish_seconds:.2f}",
         f"{b.publish_seconds:.2f}"),
        ("Prometheus queries per interval", f"{a.queries:.1f}", f"{b.queries:.1f}"),
    ]  # fmt: skip
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'1 viewer':>14}  {f'{n.viewers} viewers':>14}")
    for label, x, y in rows:
        print(f"{label:{width}}  {x:>14}  {y:>14}")
    for runs in (one, many):
        errors = sum((r.tally.errors for r in runs), Counter[str]())
        if errors:
            listed = ", ".join(f"{count} x {kind}" for kind, count in errors.most_common())
            print(f"errors with {runs[0].viewers} viewer(s), all runs: {listed}")
    ratio = b.queries / a.queries if a.queries else float("nan")
    p99_met = b.load_p99 < GOAL_P99_SECONDS * 1000
    print(
        f"Prometheus queries per interval, {n.viewers} viewers / 1: {ratio:.2f}x "
        f"(goal 1.0x: {'met' if abs(ratio - 1) < 0.005 else 'NOT met'}); "
        f"p99 page load {b.load_p99:.0f} ms (goal < {GOAL_P99_SECONDS * 1000:.0f} ms: "
        f"{'met' if p99_met else 'NOT met'}); errors {b.errors:.0f} "
        f"(goal 0: {'met' if b.errors == 0 else 'NOT met'}); every client got every push: "
        f"{'yes' if b.pushes == 1 else 'NO'}"
    )
