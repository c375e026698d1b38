"""Issue 18, failure 2: a payload of too many series must cost little and leave nothing.

A 1,000,000-series payload (under the body cap) failed correctly but was parsed in
full first, outside the deadline, filled the endpoint's label caches although the
scrape failed, and those caches stayed after the endpoint was disabled. These tests
serve such payloads (scaled down) from a real local HTTP server.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from inventory.exposition import ExpositionError, ParseBudget
from inventory.scraping import scraper as scraper_module
from inventory.scraping.policy import OutboundPolicy
from inventory.scraping.pool import ScrapeConfig, ScrapePool
from inventory.scraping.scraper import ErrorKind, ScrapeLimits, ScrapeOutcome, Scraper
from tests.inventory.badservers import send_body, serving, stream_forever
from tests.inventory.clocks import JumpingClock

LOOPBACK = OutboundPolicy(allow_loopback=True)
GOOD = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n"


def series(count: int, *, start: int = 0) -> bytes:
    """`count` samples, each of its own series (what a cardinality explosion sends)."""
    return b"# TYPE x gauge\n" + b"".join(
        b'x{i="%d",model="m"} 1\n' % i for i in range(start, start + count)
    )


def answer(body: bytes) -> Callable[[BaseHTTPRequestHandler], None]:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, body)

    return respond


def scrape_once(scraper: Scraper, url: str) -> ScrapeOutcome:
    return asyncio.run(scraper.scrape_many([url]))[0]


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[ParseBudget | None, int | None]]:
    """Each parse the scraper ran: its budget, and the line it stopped at (None: it
    did not stop). That the parser reads nothing past where it stops is proven in
    tests/inventory/exposition/test_parse_budget.py."""
    seen: list[tuple[ParseBudget | None, int | None]] = []
    real = scraper_module.parse

    def recording(*args: Any, **kwargs: Any) -> Any:
        try:
            families = real(*args, **kwargs)
        except ExpositionError as exc:
            seen.append((kwargs.get("budget"), exc.line))
            raise
        seen.append((kwargs.get("budget"), None))
        return families

    monkeypatch.setattr(scraper_module, "parse", recording)
    return seen


def test_the_sample_limit_stops_parsing_at_the_first_sample_past_it(
    parses: list[tuple[ParseBudget | None, int | None]],
) -> None:
    limit = 1_000
    with serving(answer(series(50_000))) as server:
        scraper = Scraper(policy=LOOPBACK, limits=ScrapeLimits(samples=limit))
        outcome = scrape_once(scraper, server.url())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TOO_MANY_SAMPLES
    assert outcome.error.message == f"more than {limit} samples (sample limit)"
    assert outcome.frame is None
    # The parse ran under the limit and stopped at the first sample past it (the TYPE
    # line, `limit` samples, then that one), not at the end of the payload.
    ((budget, stopped_at),) = parses
    assert budget is not None and budget.max_samples == limit
    assert stopped_at == limit + 2


def test_a_malformed_line_before_the_limit_is_still_reported_as_such() -> None:
    body = series(10) + b"not a sample\n" + series(5_000, start=10)
    with serving(answer(body)) as server:
        scraper = Scraper(policy=LOOPBACK, limits=ScrapeLimits(samples=100))
        outcome = scrape_once(scraper, server.url())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.PARSE_ERROR
    assert outcome.error.message.startswith("parse error at line 12:")


def test_the_sample_limit_stops_an_openmetrics_parse_too() -> None:
    body = series(5_000) + b"# EOF\n"

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, body, content_type="application/openmetrics-text; version=1.0.0")

    with serving(respond) as server:
        scraper = Scraper(policy=LOOPBACK, limits=ScrapeLimits(samples=100))
        outcome = scrape_once(scraper, server.url())
    assert outcome.error is not None
    assert outcome.error.message == "more than 100 samples (sample limit)"


def test_the_deadline_covers_parsing() -> None:
    clock = JumpingClock(jump_after=1)  # the scrape's start is read in time
    with serving(answer(series(20_000))) as server:
        scraper = Scraper(policy=LOOPBACK, limits=ScrapeLimits(timeout_seconds=2.0), clock=clock)
        outcome = scrape_once(scraper, server.url())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TIMEOUT
    assert (
        outcome.error.message == "no complete scrape within 2s (the deadline passed while parsing)"
    )
    assert clock.readings > 1  # the parse read the clock, and stopped at the first look
    assert outcome.url not in scraper.label_caches


def test_a_failed_scrape_leaves_no_cache_behind() -> None:
    bodies = {
        "/over": series(600),
        "/malformed": series(300) + b"bad line\n",
        "/good-then-over": GOOD,
    }

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, bodies[h.path])

    with serving(respond) as server:
        scraper = Scraper(policy=LOOPBACK, limits=ScrapeLimits(samples=500))
        flipping = server.url("/good-then-over")
        assert scrape_once(scraper, flipping).ok
        assert flipping in scraper.label_caches
        bodies["/good-then-over"] = series(600)
        outcomes = asyncio.run(
            scraper.scrape_many([server.url("/over"), server.url("/malformed"), flipping])
        )
    assert [o.error.kind if o.error else None for o in outcomes] == [
        ErrorKind.TOO_MANY_SAMPLES,
        ErrorKind.PARSE_ERROR,
        ErrorKind.TOO_MANY_SAMPLES,
    ]
    assert scraper.label_caches == {}
    assert scraper.checked_labels == {}


def test_a_failed_fetch_keeps_the_cache_of_the_last_good_scrape() -> None:
    bodies = [GOOD]

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, bodies[-1], status=200 if len(bodies) == 1 else 503)

    with serving(respond) as server:
        scraper = Scraper(policy=LOOPBACK)
        url = server.url()
        assert scrape_once(scraper, url).ok
        cache = scraper.label_caches[url]
        bodies.append(b"")
        failed = scrape_once(scraper, url)
    assert failed.error is not None and failed.error.kind == ErrorKind.HTTP_STATUS
    # Nothing of the failed scrape went into it: it is what the last success left.
    assert scraper.label_caches[url] is cache


def _largest_reachable(root: object, budget: int = 200_000) -> int:
    """The size of the largest bytes or str reachable from `root` (frames included)."""
    largest = 0
    seen: set[int] = set()
    todo = [root]
    while todo and len(seen) < budget:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, bytes | bytearray | str):
            largest = max(largest, len(obj))
            continue
        if isinstance(obj, type):
            continue  # classes reach modules and everything else
        todo.extend(gc.get_referents(obj))
    return largest


@pytest.mark.parametrize("failure", ["too_large", "too_many_samples", "parse_error"])
def test_a_failed_scrape_holds_no_body(failure: str) -> None:
    limits = ScrapeLimits(body_bytes=2 * 1024 * 1024, samples=20_000)

    def respond(h: BaseHTTPRequestHandler) -> None:
        if failure == "too_large":
            stream_forever(h, b"# " + b"x" * 65_533 + b"\n", limit_bytes=4 * 1024 * 1024)
        elif failure == "too_many_samples":
            send_body(h, series(30_000))
        else:
            send_body(h, series(15_000) + b"bad line\n")

    with serving(respond) as server:
        scraper = Scraper(policy=LOOPBACK, limits=limits)
        outcome = scrape_once(scraper, server.url())
    assert outcome.error is not None and outcome.error.kind == failure
    # Nothing reachable from the outcome (its error's traceback frames included) holds
    # the body or its lines until a full collection.
    assert outcome.error.__traceback__ is None
    assert _largest_reachable(outcome) < 64 * 1024
    assert _largest_reachable(scraper) < 64 * 1024


def test_a_cycle_drops_the_caches_of_urls_no_longer_scraped() -> None:
    with serving(answer(GOOD)) as server:
        urls = [server.url(f"/replica-{i}/metrics") for i in range(3)]
        scraper = Scraper(policy=LOOPBACK)
        asyncio.run(scraper.scrape_many(urls))
        assert set(scraper.label_caches) == set(urls)
        scraper.drop_caches([urls[0]])
        assert set(scraper.label_caches) == set(urls[1:])
        assert scraper.cached_urls() == set(urls[1:])


def test_the_pool_drops_caches_of_disabled_or_deleted_endpoints_in_process() -> None:
    pool = ScrapePool(processes=0, config=ScrapeConfig((), True, ScrapeLimits(), 4))
    try:
        with serving(answer(GOOD)) as server:
            urls = [server.url(f"/replica-{i}/metrics") for i in range(3)]
            assert all(o.ok for o in pool.scrape("fleet-h", urls, []))
            assert pool.cached_urls("fleet-h") == set(urls)
            # urls[2] disabled or deleted: the fleet's next cycle leaves it out.
            assert all(o.ok for o in pool.scrape("fleet-h", urls[:2], []))
            assert pool.cached_urls("fleet-h") == set(urls[:2])
            pool.scrape("fleet-h", [], [])  # every endpoint disabled
            assert pool.cached_urls("fleet-h") == set()
    finally:
        pool.close()


def test_the_pool_drops_caches_of_disabled_or_deleted_endpoints_in_workers() -> None:
    pool = ScrapePool(processes=2, config=ScrapeConfig((), True, ScrapeLimits(), 4))
    try:
        with serving(answer(GOOD)) as server:
            urls = [server.url(f"/replica-{i}/metrics") for i in range(6)]
            assert all(o.ok for o in pool.scrape("fleet-w", urls, []))
            assert pool.cached_urls("fleet-w") == set(urls)
            assert all(o.ok for o in pool.scrape("fleet-w", urls[:1], []))
            assert pool.cached_urls("fleet-w") == set(urls[:1])
            pool.scrape("fleet-w", [], [])
            assert pool.cached_urls("fleet-w") == set()
    finally:
        pool.close()


def test_one_hostile_endpoint_costs_no_more_than_its_limit_for_the_others(
    parses: list[tuple[ParseBudget | None, int | None]],
) -> None:
    # A hostile endpoint next to good ones: the good ones succeed and the hostile
    # payload is parsed only up to the limit (its cost is bounded by the limit).
    bodies = {"/hostile": series(40_000)}

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, bodies.get(h.path, GOOD))

    with serving(respond) as server:
        scraper = Scraper(policy=LOOPBACK, limits=ScrapeLimits(samples=500))
        urls = [server.url("/hostile"), *(server.url(f"/good-{i}") for i in range(3))]
        outcomes = asyncio.run(scraper.scrape_many(urls))
    assert [o.ok for o in outcomes] == [False, True, True, True]
    assert sorted(stopped or 0 for _, stopped in parses) == [0, 0, 0, 502]
    assert set(scraper.label_caches) == set(urls[1:])


@pytest.mark.django_db
def test_disabling_or_deleting_an_endpoint_drops_its_caches_on_the_next_cycle() -> None:
    from inventory import services
    from inventory.models import Endpoint
    from inventory.registration import targets_import
    from inventory.targets import TargetSpec

    with serving(answer(GOOD)) as server:
        urls = [server.url(f"/replica-{i}/metrics") for i in range(3)]
        specs = [TargetSpec(url, "vllm", {}) for url in urls]
        fleet = targets_import(fleet_slug="hostile-fleet", specs=specs).fleet
        pool = services.scrape_pool()
        assert services.fleet_scrape(fleet_id=fleet.pk).succeeded == 3
        assert pool.cached_urls(str(fleet.code)) == set(urls)
        Endpoint.objects.filter(url=urls[0]).update(enabled=False)
        Endpoint.objects.filter(url=urls[1]).delete()
        assert services.fleet_scrape(fleet_id=fleet.pk).succeeded == 1
    assert pool.cached_urls(str(fleet.code)) == {urls[2]}
