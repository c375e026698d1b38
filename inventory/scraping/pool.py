"""Scraping on every core: endpoints are sharded over worker processes by URL.

Parsing is CPU-bound Python, so one process tops out at one core. A pool of
worker processes (spawned, so they inherit no threads or database connections
from the web process) each keeps its own Scraper per fleet; a URL always goes
to the same worker, so its label cache stays warm from cycle to cycle. Workers
return compact, picklable outcomes; the parent writes the database.

Each cycle names every URL of the fleet still scraped, so a worker drops what it
kept for the fleet's other URLs (endpoints disabled or deleted since): once workers
run, every cycle reaches every worker, even one with no URL of the fleet left.

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


# Worker-process state: one Scraper per fleet, made on first use.
_worker_scrapers: dict[str, Scraper] = {}


def _worker_init() -> None:
    """Runs first in each worker: Ctrl-C is the parent's to handle, so a worker neither
    dies of it mid-scrape nor prints a KeyboardInterrupt traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_scrape(
    fleet_code: str, config: ScrapeConfig, urls: list[str], forget: list[str]
) -> list[ScrapeOutcome]:
    return _scrape_with(_worker_scrapers, fleet_code, config, urls, forget)


def _worker_cached_urls(fleet_code: str) -> set[str]:
    return _cached_urls(_worker_scrapers, fleet_code)


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
        if self.processes == 0 or (len(urls) < 2 and not self._executors):
            return _scrape_with(self._local, fleet_code, self.config, urls, forget)
        # From now on the workers scrape this fleet: what this process kept for it goes.
        self._local.pop(fleet_code, None)
        executors = self._ensure_executors()
        shards: list[list[int]] = [[] for _ in executors]
        for index, url in enumerate(urls):
            shards[shard_of(url, len(executors))].append(index)
        futures: list[tuple[list[int], Future[list[ScrapeOutcome]]]] = []
        ordered: list[ScrapeOutcome | None] = [None] * len(urls)
        try:
            # submit() itself raises once the executor has noticed a dead worker.
            # Every worker gets the fleet's cycle, one without URLs too: it then drops
            # what it kept for the fleet.
            for shard, (executor, indices) in enumerate(zip(executors, shards, strict=True)):
                shard_urls = [urls[i] for i in indices]
                shard_forget = [u for u in forget if shard_of(u, len(executors)) == shard]
                future = executor.submit(
                    _worker_scrape, fleet_code, self.config, shard_urls, shard_forget
                )
                futures.append((indices, future))
            for indices, future in futures:
                for index, outcome in zip(indices, future.result(), strict=True):
                    ordered[index] = outcome
        except BrokenProcessPool:
            # A worker died (OOM kill, say): start fresh next cycle instead of failing forever.
            self.close()
            raise
        return [outcome for outcome in ordered if outcome is not None]

    def cached_urls(self, fleet_code: str) -> set[str]:
        """The URLs of the fleet that this process or its workers keep anything for."""
        cached = _cached_urls(self._local, fleet_code)
        for executor in list(self._executors):
            cached |= executor.submit(_worker_cached_urls, fleet_code).result()
        return cached

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
    fleet_code: str,
    config: ScrapeConfig,
    urls: list[str],
    forget: list[str],
) -> list[ScrapeOutcome]:
    scraper = scrapers.get(fleet_code)
    if not urls:
        # No endpoint of the fleet left here (all disabled or deleted, or sharded
        # elsewhere): nothing of it is kept.
        scrapers.pop(fleet_code, None)
        return []
    if scraper is None:
        scraper = Scraper(
            policy=OutboundPolicy(config.allow, config.allow_loopback),
            limits=config.limits,
            concurrency=config.concurrency,
        )
        scrapers[fleet_code] = scraper
    scraper.forget_layouts(forget)
    scraper.retain(urls)  # endpoints disabled or deleted since the last cycle
    return asyncio.run(scraper.scrape_many(urls))
