"""The worker-process path the production scheduler uses (tests default to in-process)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from http.server import BaseHTTPRequestHandler

import pytest

from devtools.waiting import wait_until
from fleetsim.api import Fleet, start_fleet
from inventory.scraping.pool import ScrapeConfig, ScrapePool, shard_of
from inventory.scraping.scraper import ScrapeLimits
from tests.inventory.badservers import send_body, serving

CONFIG = ScrapeConfig(allow=(), allow_loopback=True, limits=ScrapeLimits(), concurrency=8)


@pytest.fixture(scope="module")
def sim() -> Iterator[Fleet]:
    with start_fleet(replicas=3, scenario="steady", seed=5) as running:
        yield running


@pytest.fixture
def pool() -> Iterator[ScrapePool]:
    workers = ScrapePool(processes=2, config=CONFIG)
    yield workers
    workers.close()


def test_workers_return_outcomes_in_request_order(sim: Fleet, pool: ScrapePool) -> None:
    urls = [t.url for t in sim.targets]
    outcomes = pool.scrape("fleet-a", urls, [])
    assert [o.url for o in outcomes] == urls
    assert all(o.ok for o in outcomes)
    assert {shard_of(url, 2) for url in urls} == {0, 1}


def test_a_worker_keeps_its_layout_memo_across_cycles_and_can_be_told_to_forget(
    pool: ScrapePool,
) -> None:
    # A fixed payload: a live replica may legitimately change its layout between scrapes.
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")

    with serving(respond) as server:
        urls = [server.url(f"/replica-{i}/metrics") for i in range(4)]
        first = pool.scrape("fleet-b", urls, [])
        second = pool.scrape("fleet-b", urls, [])
        third = pool.scrape("fleet-b", urls, [urls[0]])
    assert all(o.frame is not None and o.frame.layout_blob is not None for o in first)
    assert all(o.frame is not None and o.frame.layout_blob is None for o in second)
    assert third[0].frame is not None and third[0].frame.layout_blob is not None
    assert all(o.frame is not None and o.frame.layout_blob is None for o in third[1:])


def test_blocked_targets_are_refused_inside_the_workers_too(pool: ScrapePool) -> None:
    strict = ScrapePool(processes=2, config=ScrapeConfig((), False, ScrapeLimits(), 4))
    try:
        outcomes = strict.scrape("fleet-c", ["http://127.0.0.1:9/metrics", "http://[::1]:9/m"], [])
    finally:
        strict.close()
    assert [o.error.kind if o.error else None for o in outcomes] == ["blocked", "blocked"]


def test_a_pool_whose_worker_died_starts_fresh_on_the_next_cycle(sim: Fleet) -> None:
    workers = ScrapePool(processes=2, config=CONFIG)
    urls = [t.url for t in sim.targets]
    try:
        workers.scrape("fleet-d", urls, [])
        processes = [p for e in workers._executors for p in e._processes.values()]
        for process in processes:
            assert process.pid is not None  # started: the scrape above ran on it
            os.kill(process.pid, signal.SIGKILL)
        for process in processes:
            process.join(10)
        with pytest.raises(BrokenProcessPool):
            workers.scrape("fleet-d", urls, [])
        assert all(o.ok for o in workers.scrape("fleet-d", urls, []))
    finally:
        workers.close()


def test_celery_worker_processes_scrape_without_children_of_their_own() -> None:
    from fleetscope.celery import scrape_inside_worker_processes
    from inventory import services

    try:
        scrape_inside_worker_processes()
        assert services.scrape_pool().processes == 0
    finally:
        services.scrape_pool_close()
        services._state.in_process_only = False


def test_ctrl_c_is_the_parents_to_handle_workers_ignore_it_and_close_still_ends_them(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # Ctrl-C reaches the whole foreground process group: a worker that took it would
    # print a KeyboardInterrupt traceback (one per worker) and die mid-scrape.
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")

    workers = ScrapePool(processes=2, config=CONFIG)  # spawned here: stderr is captured
    try:
        with serving(respond) as server:
            urls = [server.url(f"/replica-{i}/metrics") for i in range(6)]
            assert {shard_of(url, 2) for url in urls} == {0, 1}
            assert all(o.ok for o in workers.scrape("fleet-e", urls, []))
            processes = [p for e in workers._executors for p in e._processes.values()]
            assert len(processes) == 2
            for process in processes:
                assert process.pid is not None
                os.kill(process.pid, signal.SIGINT)
            # A round trip through both shards: each worker has run Python since the signal
            # was sent, so a KeyboardInterrupt would have been raised by now.
            assert all(o.ok for o in workers.scrape("fleet-e", urls, []))
            assert all(p.is_alive() and p.exitcode is None for p in processes)
            assert [p for e in workers._executors for p in e._processes.values()] == processes
    finally:
        workers.close()
    # close() ends every worker, cleanly: the parent's shutdown does not rely on signals.
    assert [p.exitcode for p in processes] == [0, 0]
    err = capfd.readouterr().err
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err


def test_close_terminates_a_worker_still_busy_after_the_grace() -> None:
    # A stop (Ctrl-C, SIGTERM) must not wait out every target's deadline: a worker
    # still scraping after the grace is terminated.
    release = threading.Event()

    def respond(h: BaseHTTPRequestHandler) -> None:
        release.wait(60)  # answers only when the test lets it

    workers = ScrapePool(processes=2, config=CONFIG)
    failures: list[BaseException] = []

    def cycle() -> None:
        try:
            workers.scrape("fleet-f", urls, [])
        except BaseException as error:  # the pool breaks under it: expected
            failures.append(error)

    try:
        with serving(respond) as server:
            urls = [server.url(f"/replica-{i}/metrics") for i in range(6)]
            assert {shard_of(url, 2) for url in urls} == {0, 1}
            scraping = threading.Thread(target=cycle)
            scraping.start()
            wait_until(lambda: True if len(server.requests) >= 2 else None, what="both workers")
            processes = [p for e in workers._executors for p in e._processes.values()]
            started = time.monotonic()
            workers.close(grace=0.5)
            took = time.monotonic() - started
            scraping.join(30)
            release.set()
    finally:
        release.set()
        workers.close()
    assert took < CONFIG.limits.timeout_seconds / 2, took
    assert [p.exitcode for p in processes] == [-signal.SIGTERM, -signal.SIGTERM]
    assert not scraping.is_alive()
    assert [type(e) for e in failures] == [BrokenProcessPool]
