"""The worker-process path the production scheduler uses (tests default to in-process)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from django.utils import timezone

from devtools.waiting import wait_until
from fleetsim.api import Fleet, start_fleet
from inventory import services
from inventory.models import Fleet as DbFleet
from inventory.models import ScrapeRun
from inventory.registration import targets_import
from inventory.scraping.pool import ScrapeConfig, ScrapePool, shard_of
from inventory.scraping.scraper import ScrapeLimits
from inventory.targets import TargetSpec
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


# --- the services' pool: what the embedded scheduler and Celery's processes run ----------


FIXED = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"


def fixed_payload(h: BaseHTTPRequestHandler) -> None:
    send_body(h, FIXED)


def register(slug: str, urls: list[str]) -> DbFleet:
    specs = [TargetSpec(url, "vllm", {}) for url in urls]
    return targets_import(fleet_slug=slug, specs=specs).fleet


@pytest.fixture
def services_on_workers(settings: Any) -> Iterator[ScrapePool]:
    """The services' scrape pool with two worker processes, as the embedded scheduler
    runs it (the suite's settings scrape in the test process)."""
    services.scrape_pool_close()
    settings.FLEETSCOPE_SCRAPE_PROCESSES = 2
    try:
        yield services.scrape_pool()
    finally:
        services.scrape_pool_close()
        services._state.forget.clear()


@pytest.mark.django_db
def test_a_deleted_fleets_scraper_and_caches_leave_the_workers_on_the_next_cycle(
    services_on_workers: ScrapePool,
) -> None:
    pool = services_on_workers
    with serving(fixed_payload) as server:
        gone_urls = [server.url(f"/gone-{i}/metrics") for i in range(4)]
        idle_urls = [server.url(f"/idle-{i}/metrics") for i in range(4)]
        kept_urls = [server.url(f"/kept-{i}/metrics") for i in range(4)]
        assert {shard_of(url, 2) for url in gone_urls} == {0, 1}
        gone = register("gone-fleet", gone_urls)
        idle = register("idle-fleet", idle_urls)
        kept = register("kept-fleet", kept_urls)
        codes = {fleet.slug: str(fleet.code) for fleet in (gone, idle, kept)}
        assert [r.succeeded for r in services.fleets_scrape_all()] == [4, 4, 4]
        assert pool._executors  # the worker processes scraped them
        assert pool.cached_urls(codes["gone-fleet"]) == set(gone_urls)

        gone.delete()
        idle.endpoints.update(enabled=False)  # a fleet with nothing left to scrape
        assert [r.succeeded for r in services.fleets_scrape_all()] == [0, 4]
        assert pool.cached_urls(codes["gone-fleet"]) == set()
        assert pool.cached_urls(codes["idle-fleet"]) == set()
        assert pool.cached_urls(codes["kept-fleet"]) == set(kept_urls)
        assert pool.fleets_held() == {codes["kept-fleet"]}

        # The last fleets go too: a cycle with no fleet at all still reaches the workers.
        kept.delete()
        idle.delete()
        assert services.fleets_scrape_all() == []
        assert pool.fleets_held() == set()


@pytest.mark.django_db
def test_a_celery_process_drops_a_deleted_fleets_scraper_on_its_next_fleet_task(
    settings: Any,
) -> None:
    # Celery's processes scrape in-process, one fleet per task: each task also drops
    # what the process kept for fleets deleted since.
    services.scrape_pool_close()
    services._state.in_process_only = True
    try:
        pool = services.scrape_pool()
        with serving(fixed_payload) as server:
            gone_urls = [server.url(f"/gone-{i}/metrics") for i in range(2)]
            gone = register("gone-fleet", gone_urls)
            kept = register("kept-fleet", [server.url(f"/kept-{i}/metrics") for i in range(2)])
            gone_code = str(gone.code)
            assert services.fleet_scrape(fleet_id=gone.pk).succeeded == 2
            assert services.fleet_scrape(fleet_id=kept.pk).succeeded == 2
            assert pool.cached_urls(gone_code) == set(gone_urls)
            gone.delete()
            assert services.fleet_scrape(fleet_id=kept.pk).succeeded == 2
        assert pool.cached_urls(gone_code) == set()
        assert pool.fleets_held() == {str(kept.code)}
    finally:
        services.scrape_pool_close()
        services._state.in_process_only = False
        services._state.forget.clear()


@pytest.mark.django_db
def test_a_dripping_endpoint_holds_its_own_fleet_for_its_deadline_and_no_other_fleet(
    services_on_workers: ScrapePool, settings: Any
) -> None:
    # A tiny server stands in for the hostile endpoint (a real vLLM cannot be made to drip
    # on demand): headers at once, then one byte every 0.1 s, never a whole body in time.
    settings.FLEETSCOPE_SCRAPE_TIMEOUT_SECONDS = deadline = 2.0
    services.scrape_pool_close()  # the pool takes the deadline when it is made
    release = threading.Event()

    def respond(h: BaseHTTPRequestHandler) -> None:
        if "/drip" not in h.path:
            send_body(h, FIXED)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.end_headers()
        while not release.wait(0.1):  # until the scraper hangs up, or the test ends
            h.wfile.write(b"#")

    try:
        with serving(respond) as server:
            healthy = register("c-healthy", [server.url(f"/c-{i}/metrics") for i in range(4)])
            services.fleets_scrape_all()  # the workers start: no part of what is timed below
            assert services.scrape_pool()._executors
            for slug in ("a-dripping", "b-dripping"):
                register(slug, [server.url(f"/{slug}/drip"), server.url(f"/{slug}/good")])
            cycle_start = timezone.now()
            started = time.monotonic()
            reports = services.fleets_scrape_all()
            took = time.monotonic() - started
    finally:
        release.set()
    assert [(r.succeeded, r.failed) for r in reports] == [(1, 1), (1, 1), (4, 0)]
    runs = ScrapeRun.objects.filter(started_at__gte=cycle_start)
    drips = runs.filter(endpoint__url__endswith="/drip")
    assert set(drips.values_list("error_kind", flat=True)) == {"timeout"}
    first = min(run.started_at for run in runs)
    healthy_first = min(run.started_at for run in runs.filter(endpoint__fleet=healthy))
    # Each dripping endpoint keeps its own fleet's cycle open for its deadline; the
    # healthy fleet is scraped at the same moment, not after the other fleets' deadlines.
    # Bounds with room for a loaded machine: scraped one after another, the healthy fleet
    # started two deadlines late and the cycle took two (4.03 s and 4.04 s here).
    delay = (healthy_first - first).total_seconds()
    assert delay < deadline, (delay, took)
    assert took < deadline * 1.9, (delay, took)
