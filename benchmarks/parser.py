"""Throughput of FleetScope's exposition parser against prometheus_client's.

    .venv/bin/python benchmarks/parser.py            # MB/s, medians, ratios
    .venv/bin/python benchmarks/parser.py --memory   # peak tracemalloc per parse

Payloads come from the simulated fleet (`fleetsim.api.sample_exposition`): one
single-engine replica and one `--data-parallel-size 8` replica. Three figures,
side by side in one run:

* cold: a payload the process has never seen. An empty LabelCache, and the
  process-wide tables of validated label text and metadata emptied before each
  run (`inventory.exposition.forget_shared`, untimed);
* new endpoint: the first scrape of a replica in a process that has scraped
  another replica of the fleet (same metrics and label sets, other values): an
  empty LabelCache, the process-wide tables holding the other replica's text.
  This is what most endpoints of the first cycle after a deploy cost;
* warm: a cache filled by the previous scrape of the same replica (15 s earlier),
  which is how the scraper runs: the previous scrape is parsed again, untimed,
  before every warm run. The cache holds validated label and metadata text and
  the previous scrape's line layout and result, so the warm figure is what every
  scrape after the first one costs.

prometheus_client is consumed in full (`list()` of families, each holding its
samples).

Times are CPU time of the parsing thread (`time.thread_time`), medians over
interleaved bursts: parsing is CPU-bound, and on a shared machine wall-clock
medians of a 1 ms parse swing with whatever else is running.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

# benchmarks/fleetsim.py would shadow the fleetsim package when run from this folder.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sample_exposition = importlib.import_module("fleetsim.api").sample_exposition
exposition = importlib.import_module("inventory.exposition")
LabelCache, parse = exposition.LabelCache, exposition.parse
forget_shared = exposition.forget_shared

SCRAPE_INTERVAL_SECONDS = 15.0
WARM_SECONDS = 300.0


def payloads() -> list[tuple[str, str, str, str]]:
    """(label, this scrape, previous scrape, another replica's scrape) per replica shape."""
    out = []
    for label, dp in (("1 engine", 1), ("dp 8", 8)):
        now = sample_exposition(dp=dp, seed=0, warm_seconds=WARM_SECONDS)
        before = sample_exposition(
            dp=dp, seed=0, warm_seconds=WARM_SECONDS - SCRAPE_INTERVAL_SECONDS
        )
        other = sample_exposition(dp=dp, seed=1, warm_seconds=WARM_SECONDS)
        out.append((label, now, before, other))
    return out


def _seen(other: str) -> None:
    """The process has parsed another replica's scrape, and nothing else."""
    forget_shared()
    parse(other)


def median_seconds(
    runs: dict[str, Callable[[], object]],
    repeats: int,
    burst: int = 3,
    setups: dict[str, Callable[[], object]] | None = None,
) -> dict[str, float]:
    """Median time of each contender.

    Each round times every contender in turn, `burst` runs in a row, so slow
    drift of the machine hits all of them alike while each burst still runs on
    warm CPU caches (a 1 ms parse right after a 20 ms one would otherwise pay
    for the other's cache footprint). A contender's setup, if any, runs untimed
    before each of its runs.
    """
    setups = setups or {}
    for run in runs.values():
        run()  # let imports, regex compilation and allocator pools settle
    times: dict[str, list[float]] = {name: [] for name in runs}
    rounds = max(1, repeats // burst)
    for _ in range(rounds):
        for name, run in runs.items():
            setup = setups.get(name)
            for _ in range(burst):
                if setup is not None:
                    setup()
                start = time.thread_time()
                run()
                times[name].append(time.thread_time() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def prometheus_client_parse(text: str) -> list[object]:
    return list(text_string_to_metric_families(text))


def throughput(repeats: int) -> None:
    print(f"median CPU time of {repeats} runs as MB/s of UTF-8 payload; x = speed-up over")
    print("prometheus_client.parser.text_string_to_metric_families")
    header = f"{'payload':<10} {'size':>6} {'samples':>7} {'prom_client':>11}"
    print(
        f"{header} {'cold':>10} {'new endpt':>10} {'warm':>10}"
        f" {'cold x':>7} {'new x':>6} {'warm x':>7}"
    )
    for label, text, previous, other in payloads():
        megabytes = len(text.encode()) / 1e6
        samples = sum(len(f.samples) for f in parse(text))
        cache = LabelCache()
        parse(previous, cache=cache)
        medians = median_seconds(
            {
                "reference": partial(prometheus_client_parse, text),
                "cold": partial(parse, text),
                "new": partial(parse, text),
                "warm": partial(parse, text, cache=cache),
            },
            repeats,
            setups={
                "cold": forget_shared,
                "new": partial(_seen, other),
                # The cache remembers the last payload's layout (inventory.exposition.templates):
                # parse the previous scrape before each warm run, or every run after the first
                # would re-read a payload identical to the one before it.
                "warm": partial(parse, previous, cache=cache),
            },
        )
        reference = medians["reference"]
        rates = [megabytes / medians[k] for k in ("reference", "cold", "new", "warm")]
        ratios = [reference / medians[k] for k in ("cold", "new", "warm")]
        print(
            f"{label:<10} {megabytes * 1000:>4.0f}KB {samples:>7} {rates[0]:>6.1f} MB/s"
            f" {rates[1]:>5.1f} MB/s {rates[2]:>5.1f} MB/s {rates[3]:>5.1f} MB/s"
            f" {ratios[0]:>6.1f}x {ratios[1]:>5.1f}x {ratios[2]:>6.1f}x"
        )
    print("goals: cold >= 15x, warm >= 20x")


def peak_bytes(run: Callable[[], object]) -> int:
    gc.collect()
    tracemalloc.start()
    result = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak


def memory() -> None:
    print("peak traced memory during one parse, result kept alive (x = multiple of payload size)")
    print(
        f"{'payload':<10} {'size':>9} {'prometheus_client':>20} {'ours cold':>16} {'ours warm':>16}"
    )
    for label, text, previous, _ in payloads():
        size = len(text.encode())
        reference = peak_bytes(partial(prometheus_client_parse, text))
        forget_shared()
        cold = peak_bytes(partial(parse, text))
        cache = LabelCache()
        parse(previous, cache=cache)
        warm = peak_bytes(partial(parse, text, cache=cache))
        cells = [f"{b / 1e6:>6.2f}MB {b / size:>5.1f}x" for b in (reference, cold, warm)]
        print(f"{label:<10} {size / 1000:>7.0f}KB {cells[0]:>20} {cells[1]:>16} {cells[2]:>16}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", action="store_true", help="print peak tracemalloc instead")
    parser.add_argument("--repeats", type=int, default=31, help="timed runs per measurement")
    args = parser.parse_args()
    if args.memory:
        memory()
    else:
        throughput(args.repeats)


if __name__ == "__main__":
    main()
