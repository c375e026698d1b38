"""The blind-spot audit of 50 dashboards of 40 panels and 500 rules against a 32-replica fleet.

    .venv/bin/python benchmarks/blindspots.py [--replicas 32] [--minutes 10] [--dashboards 50]
        [--panels 40] [--rules 500] [--runs 5] [--baseline-items 200]

One fleetsim history (a quarter of the replicas on the older vLLM 0.10 dialect, so renamed
metrics are partly blind) is loaded into the embedded store through `history_import`.
Then the sources are generated as text (Grafana JSON with a `$model` variable and rows, half
of them collapsed; one Prometheus rule file) over the engine's and DCGM's metrics, current
and renamed names, histograms with `le`, and a name no catalog knows; and audited:

- FleetScope: read the sources, parse every query, check each distinct selector once against
  one read of the fleet's inventories, verdicts, since when and rewrites
  (`blindspots.sources` + `blindspots.audit.audit_items`, what the page and command run).
- Baseline: each item on its own, its selectors checked with a fresh read of the
  inventories (`check_selectors` per item), as a per-dashboard linter would; timed on
  `--baseline-items` items and scaled to all of them.
- Floor: promql-parser's bare parse of every query, nothing else.

Every run's texts differ (a factor in each query), so no run reuses an earlier one's
parses. Printed: medians, the ratio, and the first (cold) run. Goal: under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.overview import setup_django  # noqa: E402
from benchmarks.overview_fill import STEP_SECONDS, log  # noqa: E402
from fleetsim.history import History  # noqa: E402

GOAL_SECONDS = 2.0
GAUGES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",  # renamed: the older replicas only
    "vllm:num_requests_waiting_by_reason",  # the current dialect only
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "vllm:not_a_real_metric",  # never matched
)
COUNTERS = (
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:num_preemptions_total",
)
HISTOGRAMS = (
    "vllm:time_to_first_token_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",
    "vllm:request_queue_time_seconds",
)


def query(i: int, factor: int) -> str:
    """The i-th query of a generated source: one of a few shapes over one metric."""
    shape = i % 6
    model = '{model_name=~"$model"}'
    if shape == 0:
        m = GAUGES[i % len(GAUGES)]
        return f"sum by (instance) ({m}{model}) * {factor}"
    if shape == 1:
        m = COUNTERS[i % len(COUNTERS)]
        reason = ("stop", "length", "abort", "error")[(i // 6) % 4]
        labels = f'{{model_name=~"$model", finished_reason="{reason}"}}' if i % 12 == 1 else model
        return f"sum(rate({m}{labels}[$__rate_interval])) * {factor}"
    if shape == 2:
        m = HISTOGRAMS[i % len(HISTOGRAMS)]
        q = (0.5, 0.9, 0.99)[i % 3]
        inner = f"sum by (le) (rate({m}_bucket{model}[$__rate_interval]))"
        return f"histogram_quantile({q}, {inner}) * {factor}"
    if shape == 3:
        m = HISTOGRAMS[i % len(HISTOGRAMS)]
        le = ("0.5", "1", "2.5")[i % 3]
        return f'sum(rate({m}_bucket{{le="{le}"}}[5m])) / sum(rate({m}_count[5m])) * {factor}'
    if shape == 4:
        # One replica by its instance; a third of them long gone (blind).
        m = GAUGES[(i // 6) % len(GAUGES)]
        instance = f'{{instance="127.0.0.1:{18000 + (i // 6) % 48}"}}'
        return f"max_over_time({m}{instance}[$__rate_interval]) / {factor}"
    a, b = COUNTERS[i % len(COUNTERS)], GAUGES[i % len(GAUGES)]
    return f"sum(rate({a}[5m])) / sum({b}) * {factor}"


def dashboard(number: int, panels: int, factor: int) -> str:
    templating = {
        "list": [
            {
                "name": "model",
                "type": "query",
                "includeAll": True,
                "query": "label_values(vllm:num_requests_running, model_name)",
                "current": {"text": "All", "value": "$__all"},
            }
        ]
    }
    top: list[dict[str, Any]] = []
    row: dict[str, Any] | None = None
    for p in range(panels):
        if p % 10 == 0:
            collapsed = (p // 10) % 2 == 1
            row = {
                "id": 1000 + p,
                "type": "row",
                "title": f"Row {p // 10}",
                "collapsed": collapsed,
                "panels": [],
            }
            top.append(row)
        panel = {
            "id": p + 1,
            "type": "timeseries",
            "title": f"Panel {number}.{p}",
            "datasource": {"type": "prometheus", "uid": "prom"},
            "targets": [{"refId": "A", "expr": query(number * panels + p, factor)}],
        }
        if row is not None and row["collapsed"]:
            row["panels"].append(panel)
        else:
            top.append(panel)
    return json.dumps({"title": f"Dashboard {number}", "templating": templating, "panels": top})


def rule_file(rules: int, factor: int) -> str:
    lines = ["groups:"]
    for g in range(0, rules, 50):
        lines += [f"  - name: group-{g // 50}", "    rules:"]
        for r in range(g, min(g + 50, rules)):
            expr = query(r * 7 + 3, factor).replace('{model_name=~"$model"}', "")
            lines += [f"      - alert: Rule{r}", f"        expr: {json.dumps(expr + ' > 1')}"]
    return "\n".join(lines) + "\n"


def timed(fn: Callable[[int], Any], runs: int, first: int = 0) -> tuple[float, list[float], Any]:
    times, result = [], None
    for run in range(runs):
        started = time.perf_counter()
        result = fn(first + run)
        times.append(time.perf_counter() - started)
    return statistics.median(times), times, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=32)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--dashboards", type=int, default=50)
    parser.add_argument("--panels", type=int, default=40)
    parser.add_argument("--rules", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline-items", type=int, default=200)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="fleetscope-bench-blindspots-"))
    setup_django(workdir / "var", None, None)
    import promql_parser

    from blindspots.audit import audit_items
    from blindspots.promql import parse_selectors
    from blindspots.sources import panels_from_dashboard, rules_from_yaml
    from blindspots.verdicts import check_selectors
    from inventory.history import history_import

    try:
        started = time.perf_counter()
        older = {i: "v1-0.10" for i in range(0, args.replicas, 4)}
        history = History(
            replicas=args.replicas,
            hours=args.minutes / 60,
            step=STEP_SECONDS,
            dialect_of=older,
            seed=3,
        )
        path = workdir / "history.om"
        history.write_openmetrics(path)
        fleet = history_import(fleet_slug=f"bench-{os.getpid()}", path=path).fleet
        path.unlink()
        log(
            f"fleet: {args.replicas} replicas ({len(older)} on vLLM 0.10) x "
            f"{args.minutes:g} min, simulated and imported in "
            f"{time.perf_counter() - started:.0f} s"
        )

        def sources(factor: int) -> tuple[list[str], str]:
            texts = [dashboard(d, args.panels, factor) for d in range(args.dashboards)]
            return texts, rule_file(args.rules, factor)

        def read(factor: int) -> tuple[list[Any], list[Any]]:
            texts, rules = sources(factor)
            items, errors = rules_from_yaml(rules, "rules.yml")
            for d, text in enumerate(texts):
                found, bad = panels_from_dashboard(text, f"dashboard-{d}.json")
                items += found
                errors += bad
            return items, errors

        def ours(factor: int) -> Any:
            items, errors = read(factor)
            return audit_items(fleet, items, errors)

        # Every run has its own factor, so its texts (and parses) are new.
        cold, _, report = timed(ours, 1, first=1)
        ours_p50, ours_times, report = timed(ours, args.runs, first=2)
        counts = report.counts
        print(
            f"\nfleet: {args.replicas} replicas; {args.dashboards} dashboards x {args.panels} "
            f"panels + {args.rules} rules = {len(report.items) + len(report.errors)} items"
        )
        print("verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        selectors = Counter(v.selector for r in report.items for v in r.selectors)
        print(f"selectors: {sum(selectors.values())} ({len(selectors)} distinct)")
        print(
            f"\nfleetscope audit (read sources, parse, check, verdicts, rewrites): p50 "
            f"{ours_p50 * 1000:.0f} ms (runs: "
            f"{', '.join(f'{t * 1000:.0f}' for t in ours_times)} ms; first, cold: "
            f"{cold * 1000:.0f} ms)   goal < {GOAL_SECONDS * 1000:.0f} ms: "
            f"{'met' if ours_p50 < GOAL_SECONDS else 'NOT met'}"
        )

        items, _ = read(100)
        sample = items[: args.baseline_items]

        def baseline(factor: int) -> None:
            for item in sample:
                check_selectors(
                    fleet,
                    parse_selectors(item.expr.replace("* 100", f"* {factor}"), item.variables),
                )

        base_p50, _, _ = timed(baseline, max(1, args.runs // 2), first=200)
        scaled = base_p50 * len(items) / len(sample)
        print(
            f"baseline, each item on its own with a fresh inventory read: "
            f"{base_p50 * 1000:.0f} ms for {len(sample)} items, {scaled:.1f} s scaled to "
            f"{len(items)}; ratio {scaled / ours_p50:.0f}x"
        )

        def parse_only(factor: int) -> None:
            for item in items:
                promql_parser.parse(
                    item.expr.replace("$__rate_interval", "5m")
                    .replace("$model", ".*")
                    .replace("* 100", f"* {factor}")
                )

        floor, _, _ = timed(parse_only, args.runs, first=300)
        print(
            f"floor, promql-parser's bare parse of the {len(items)} queries: "
            f"{floor * 1000:.0f} ms ({floor / ours_p50:.0%} of the audit)"
        )
        fleet.delete()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        log("done")


if __name__ == "__main__":
    main()
