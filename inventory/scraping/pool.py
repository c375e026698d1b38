"""Scraping on every core: endpoints are sharded over worker processes by URL.

Parsing is CPU-bound Python, so one process tops out at one core. A pool of
worker processes (spawned, so they inherit no threads or database connections
from the web process) each keeps its own Scraper per fleet; a URL always goes
to the same worker, so its label cache stays warm from cycle to cycle. Workers
return compact, picklable outcomes; the parent writes the database.

Each cycle names every URL of the fleet still scraped, so a worker drops what it
kept for the fleet's other URLs (endpoints disabled or deleted since): once workers
run, every cycle reaches every worker, even one with no URL of the fleet left. A cycle
may also name every fleet that still exists (`live`): a worker then drops the Scraper,
and so every cache, of any other fleet (deleted since), which no later cycle would
name again.

A cycle of several fleets (`scrape_fleets`) goes to each worker as one call, and the
worker scrapes all of them at once, each fleet within its own `concurrency` slots: an
endpoint that drips until its deadline holds one slot of its own fleet, while every
other fleet is scraped beside it. A worker runs one call at a time, so one call per
fleet would keep it from every later fleet until that deadline had passed.

Workers ignore SIGINT: Ctrl-C in a terminal reaches the whole foreground process
group, and the parent alone decides on shutdown (`ScrapePool.close`, which ends the
workers through the executor, and terminates one still busy after a short grace).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import time
import zlib
from collections.abc import Collection, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from threading import Lock, Thread

from inventory.scraping.policy import OutboundPolicy
from inventory.scraping.scraper import ScrapeLimits, ScrapeOutcome, Scraper


@dataclass(frozen=True)
class ScrapeConfig:
    """Everything a worker needs to build a Scraper; picklable."""

    allow: tuple[str, ...]
    allow_loopback: bool
    limits: ScrapeLimits
    concurrency: int


@dataclass(frozen=True)
class FleetJob:
    """One fleet's part of a cycle; picklable. `urls` are every URL of the fleet still
    scraped (what is kept for its other URLs is dropped), `forget` those whose layouts
    the receiver lost (reported again)."""

    urls: list[str]
    forget: list[str] = field(default_factory=list)


# Worker-process state: one Scraper per fleet, made on first use.
_worker_scrapers: dict[str, Scraper] = {}


def _worker_init() -> None:
    """Runs first in each worker: Ctrl-C is the parent's to handle, so a worker neither
    dies of it mid-scrape nor prints a KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_scrape(
    config: ScrapeConfig, jobs: dict[str, FleetJob], live: frozenset[str] | None
) -> dict[str, list[ScrapeOutcome]]:
    return _scrape_with(_worker_scrapers, config, jobs, live)


def _worker_cached_urls(fleet_code: str) -> set[str]:
    return _cached_urls(_worker_scrapers, fleet_code)


def _worker_fleets() -> set[str]:
    return set(_worker_scrapers)


def _cached_urls(scrapers: dict[str, Scraper], fleet_code: str) -> set[str]:
    scraper = scrapers.get(fleet_code)
    return set() if scraper is None else scraper.cached_urls()


def shard_of(url: str, shards: int) -> int:
    # crc32, not hash(): stable across processes and restarts.
    return zlib.crc32(url.encode()) % shards


@dataclass
class ScrapePool:
    """Runs a fleet's scrape across `processes` workers; 0 means in this process."""

    processes: int
    config: ScrapeConfig
    _executors: list[ProcessPoolExecutor] = field(default_factory=list)
    _local: dict[str, Scraper] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def scrape(self, fleet_code: str, urls: list[str], forget: list[str]) -> list[ScrapeOutcome]:
        """Outcomes in the order of `urls`, which are all the fleet's URLs still scraped:
        whatever was kept for its other URLs is dropped."""
        return self.scrape_fleets({fleet_code: FleetJob(urls, forget)})[fleet_code]

    def scrape_fleets(
        self, jobs: Mapping[str, FleetJob], *, live: Collection[str] | None = None
    ) -> dict[str, list[ScrapeOutcome]]:
        """Scrape these fleets at once; each fleet's outcomes in the order of its URLs.

        `live`, when given, names every fleet that still exists: whatever this process or
        a worker kept for any other fleet is dropped.
        """
        kept = None if live is None else frozenset(live)
        if self.processes == 0 or (
            sum(len(job.urls) for job in jobs.values()) < 2 and not self._executors
        ):
            return _scrape_with(self._local, self.config, dict(jobs), kept)
        # From now on the workers scrape these fleets: what this process kept for them goes.
        for code in list(self._local):
            if code in jobs or (kept is not None and code not in kept):
                del self._local[code]
        executors = self._ensure_executors()
        shards_of = {
            code: [shard_of(url, len(executors)) for url in job.urls] for code, job in jobs.items()
        }
        futures: list[Future[dict[str, list[ScrapeOutcome]]]] = []
        try:
            # submit() itself raises once the executor has noticed a dead worker.
            # Every worker gets every fleet of the cycle, one without URLs there too: it
            # then drops what it kept for the fleet.
            for shard, executor in enumerate(executors):
                shard_jobs = {
                    code: FleetJob(
                        [u for u, s in zip(job.urls, shards_of[code], strict=True) if s == shard],
                        [u for u in job.forget if shard_of(u, len(executors)) == shard],
                    )
                    for code, job in jobs.items()
                }
                futures.append(executor.submit(_worker_scrape, self.config, shard_jobs, kept))
            results = [future.result() for future in futures]
        except BrokenProcessPool:
            # A worker died (OOM kill, say): start fresh next cycle instead of failing forever.
            self.close()
            raise
        out: dict[str, list[ScrapeOutcome]] = {}
        for code in jobs:
            # Each shard's outcomes come in the order of its URLs: deal them back.
            dealt = [iter(result[code]) for result in results]
            out[code] = [next(dealt[shard]) for shard in shards_of[code]]
        return out

    def cached_urls(self, fleet_code: str) -> set[str]:
        """The URLs of the fleet that this process or its workers keep anything for."""
        cached = _cached_urls(self._local, fleet_code)
        for executor in list(self._executors):
            cached |= executor.submit(_worker_cached_urls, fleet_code).result()
        return cached

    def fleets_held(self) -> set[str]:
        """The fleets that this process or its workers keep a Scraper for."""
        held = set(self._local)
        for executor in list(self._executors):
            held |= executor.submit(_worker_fleets).result()
        return held

    def _ensure_executors(self) -> list[ProcessPoolExecutor]:
        with self._lock:
            if not self._executors:
                context = multiprocessing.get_context("spawn")
                # One single-process executor per shard: a URL must always reach the same worker.
                self._executors = [
                    ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_worker_init)
                    for _ in range(self.processes)
                ]
            return self._executors

    def close(self, grace: float = 5.0) -> None:
        """End the workers: queued scrapes are cancelled, a scrape in hand may finish within
        `grace` seconds, then a worker still running is terminated."""
        with self._lock:
            processes = [
                process
                for executor in self._executors
                # The executor drops its process table on shutdown: take it first.
                for process in (executor._processes or {}).values()
            ]
            # Each executor shuts down in a thread of its own (ends its idle worker, waits
            # for a busy one), so the grace below bounds them all at once.
            stopping = [
                Thread(target=executor.shutdown, kwargs={"wait": True, "cancel_futures": True})
                for executor in self._executors
            ]
            for thread in stopping:
                thread.start()
            deadline = time.monotonic() + grace
            for thread in stopping:
                thread.join(max(0.0, deadline - time.monotonic()))
            if any(thread.is_alive() for thread in stopping):
                for process in processes:
                    # Ends a worker still scraping; one already ended is left alone.
                    process.terminate()
                for thread in stopping:
                    thread.join()
            # Forget this process's local scrapers too: a closed pool starts cold.
            self._local.clear()
            self._executors = []


def _scrape_with(
    scrapers: dict[str, Scraper],
    config: ScrapeConfig,
    jobs: Mapping[str, FleetJob],
    live: frozenset[str] | None,
) -> dict[str, list[ScrapeOutcome]]:
    if live is not None:
        # Fleets deleted since: no cycle names them again, so nothing else would drop them.
        for code in scrapers.keys() - live:
            del scrapers[code]
    runs: dict[str, tuple[Scraper, list[str]]] = {}
    for code, job in jobs.items():
        if not job.urls:
            # No endpoint of the fleet left here (all disabled or deleted, or sharded
            # elsewhere): nothing of it is kept.
            scrapers.pop(code, None)
            continue
        scraper = scrapers.get(code)
        if scraper is None:
            scraper = Scraper(
                policy=OutboundPolicy(config.allow, config.allow_loopback),
                limits=config.limits,
                concurrency=config.concurrency,
            )
            scrapers[code] = scraper
        scraper.forget_layouts(job.forget)
        scraper.retain(job.urls)  # endpoints disabled or deleted since the last cycle
        runs[code] = (scraper, job.urls)
    outcomes = asyncio.run(_side_by_side(runs)) if runs else {}
    return {code: outcomes.get(code, []) for code in jobs}


async def _side_by_side(
    runs: dict[str, tuple[Scraper, list[str]]],
) -> dict[str, list[ScrapeOutcome]]:
    """Every fleet's scrapes at once, each fleet within its own Scraper's slots: a fleet
    whose endpoints hang until their deadline keeps no other fleet waiting."""
    results = await asyncio.gather(*(scraper.scrape_many(urls) for scraper, urls in runs.values()))
    return dict(zip(runs, results, strict=True))
