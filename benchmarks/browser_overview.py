"""Fleet overview in Chromium: time to the first chart and to all charts, against drawing
every chart at once.

    .venv/bin/python benchmarks/browser_overview.py [--replicas 32] [--hours 1] [--loads 5]
        [--database-url postgres://...] [--cpu-throttle 1] [--plotly-bundle PATH]

A fleetsim history (32 replicas x 1 h at 15 s by default) is imported into the embedded
store as benchmarks/overview.py does; the real ASGI app serves it under uvicorn in a
thread of this process; headless Chromium (1400 x 900, logged in) loads the default
overview `--loads` times per variant, the variants interleaved, after one warm-up load
each. Times are from the navigation's start, read in the page: the DOM ready, the overview
JSON's arrival, and the marks the page's scripts set at the first paint after its first
chart (`fleetscope:first-chart`) and after its last (`fleetscope:all-charts`).

- fleetscope: the page as served: plotly.js's cartesian bundle (from npm, `make install`)
  loaded asynchronously while the overview is fetched, the replica table and text drawn
  first, then the charts one per task, those on screen first, the rest when the page is
  idle.
- cartesian bundle, routed / full bundle, routed: the same page with plotly.js handed to
  the browser by Playwright (never from its cache, like a first visit), the cartesian
  bundle or the full one of the plotly Python package (what is served without npm):
  their ratio is what the smaller bundle buys.
- baseline: the page as it was: `?render=all-at-once` with the full bundle (routed),
  plotly.js loaded before the scripts, then every chart drawn with Plotly.newPlot in one go.
- with --plotly-bundle PATH: fleetscope again with that file served as
  vendor/plotly.min.js.

Goal: first chart < 1 s and all charts < 2.5 s (p50) on 2 cores.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from playwright.sync_api import ViewportSize

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.overview import setup_django, viewer_sessions  # noqa: E402
from benchmarks.overview_fill import fill, log  # noqa: E402

GOAL_FIRST_MS = 1000.0
GOAL_ALL_MS = 2500.0
VIEWPORT: ViewportSize = {"width": 1400, "height": 900}
MEASURE = """() => {
  const mark = name => (performance.getEntriesByName(name)[0] || {}).startTime;
  const navigation = performance.getEntriesByType("navigation")[0];
  const resource = part =>
    performance.getEntriesByType("resource").find(e => e.name.includes(part));
  const json = resource("overview.json");
  const plotly = resource("/vendor/plotly.min.js");
  return {
    dom: navigation.domContentLoadedEventEnd,
    json: json ? json.responseEnd : null,
    plotly: plotly ? plotly.responseEnd : null,
    plotlyBytes: plotly ? plotly.transferSize : null,
    first: mark("fleetscope:first-chart"),
    all: mark("fleetscope:all-charts"),
    charts: document.querySelectorAll(".js-plotly-plot").length,
  };
}"""
DONE = (
    "() => document.body.dataset.allDrawn === 'true'"
    " && performance.getEntriesByName('fleetscope:all-charts').length > 0"
)


def load(context: Any, url: str, throttle: float) -> dict[str, float]:
    page = context.new_page()
    try:
        if throttle > 1:
            cdp = context.new_cdp_session(page)
            cdp.send("Emulation.setCPUThrottlingRate", {"rate": throttle})
        page.goto(url)
        page.wait_for_function(DONE, timeout=180_000, polling=100)
        figures: dict[str, float] = page.evaluate(MEASURE)
        return figures
    finally:
        page.close()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def line(name: str, runs: list[dict[str, float]]) -> str:
    def stat(key: str) -> str:
        values = [run[key] for run in runs if run[key] is not None]
        return f"{statistics.median(values):5.0f} / {p95(values):5.0f}"

    charts = sorted({run["charts"] for run in runs})
    fetched = sorted({run["plotlyBytes"] for run in runs})
    return (
        f"   {name:<26} DOM ready {stat('dom')}   plotly.js in {stat('plotly')}   "
        f"JSON in {stat('json')}   "
        f"first chart {stat('first')}   all charts {stat('all')}   ({charts} charts, "
        f"plotly.js transfer sizes {fetched} B)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=32)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--loads", type=int, default=5, help="measured loads per variant")
    parser.add_argument("--database-url", help="PostgreSQL URL (default: a throwaway SQLite)")
    parser.add_argument(
        "--cpu-throttle", type=float, default=1.0,
        help="Chromium's CPU slow-down (DevTools emulation), 1 = none",
    )  # fmt: skip
    parser.add_argument(
        "--plotly-bundle", type=Path,
        help="a plotly.js dist file to measure in place of the full bundle",
    )  # fmt: skip
    args = parser.parse_args()
    # whitenoise streams static files with a sync iterator, which the ASGI handler warns about.
    warnings.filterwarnings("ignore", "StreamingHttpResponse must consume synchronous")
    warnings.filterwarnings("ignore", "No directory at")
    if shutil.which("chromium") is None:
        raise SystemExit("needs chromium (Debian's package)")
    workdir = Path(tempfile.mkdtemp(prefix="fleetscope-bench-browser-"))
    setup_django(workdir / "var", args.database_url, None)
    from django.conf import settings

    from devtools.browser import asgi_server, chromium
    from fleetscope.staticfinders import FULL_BUNDLE, plotly_bundle

    try:
        fleet, _ = fill(args.replicas, args.hours, None)
        (cookie,) = viewer_sessions(1)
        cookie_name = settings.SESSION_COOKIE_NAME
        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        print(
            f"fleet: {args.replicas} replicas (+ DCGM, gateway, prober) x {args.hours:g} h; "
            f"database {engine}; Chromium {VIEWPORT['width']}x{VIEWPORT['height']}, CPU "
            f"throttle {args.cpu_throttle:g}x; {args.loads} loads per variant, after a warm-up"
        )
        with asgi_server() as base, chromium() as browser:
            path = f"{base}/fleets/{fleet.slug}/"
            variants: dict[str, tuple[Any, str]] = {}

            def context(bundle: Path | None) -> Any:
                made = browser.new_context(viewport=VIEWPORT)
                made.add_cookies([{"name": cookie_name, "value": cookie, "url": base}])
                if bundle is not None:
                    body = bundle.read_bytes()
                    made.route(
                        "**/vendor/plotly.min.js",
                        lambda route: route.fulfill(body=body, content_type="text/javascript"),
                    )
                return made

            if plotly_bundle() == FULL_BUNDLE:
                raise SystemExit("the cartesian bundle is not installed: run make install")
            full = context(FULL_BUNDLE)
            variants["fleetscope"] = (context(None), path)
            variants["cartesian bundle, routed"] = (context(plotly_bundle()), path)
            variants["full bundle, routed"] = (full, path)
            variants["baseline (all at once)"] = (full, f"{path}?render=all-at-once")
            if args.plotly_bundle is not None:
                variants[f"fleetscope, {args.plotly_bundle.name}"] = (
                    context(args.plotly_bundle),
                    path,
                )
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
            for ctx, url in variants.values():
                load(ctx, url, args.cpu_throttle)  # warm-up: browser cache, server caches
            for i in range(args.loads):
                for name, (ctx, url) in variants.items():
                    runs[name].append(load(ctx, url, args.cpu_throttle))
                log(f"load {i + 1}/{args.loads} done")
        print("\ndefault overview, ms from navigation start, p50 / p95:")
        for name, measured in runs.items():
            print(line(name, measured))
        ours, base_runs = runs["fleetscope"], runs["baseline (all at once)"]
        first = statistics.median(r["first"] for r in ours)
        every = statistics.median(r["all"] for r in ours)
        base_first = statistics.median(r["first"] for r in base_runs)
        base_all = statistics.median(r["all"] for r in base_runs)
        full_runs, cartesian_runs = runs["full bundle, routed"], runs["cartesian bundle, routed"]
        full_first = statistics.median(r["first"] for r in full_runs)
        full_all = statistics.median(r["all"] for r in full_runs)
        cartesian_first = statistics.median(r["first"] for r in cartesian_runs)
        cartesian_all = statistics.median(r["all"] for r in cartesian_runs)
        print(
            f"   ratio baseline / fleetscope (p50): first chart {base_first / first:.1f}x, "
            f"all charts {base_all / every:.2f}x; full bundle / cartesian (both routed): "
            f"first chart {full_first / cartesian_first:.2f}x, all charts "
            f"{full_all / cartesian_all:.2f}x"
        )
        print(
            f"   goal: first chart < {GOAL_FIRST_MS:.0f} ms: "
            f"{'met' if first < GOAL_FIRST_MS else 'not met'}; all charts < "
            f"{GOAL_ALL_MS:.0f} ms: {'met' if every < GOAL_ALL_MS else 'not met'}"
        )
        fleet.delete()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
