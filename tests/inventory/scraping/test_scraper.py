"""The scraper against fleetsim (the real path) and against endpoints that misbehave."""

from __future__ import annotations

import asyncio
import gzip
import threading
import tracemalloc
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler

import pytest

from fleetsim.api import Fleet, start_fleet
from inventory.scraping.policy import OutboundPolicy
from inventory.scraping.scraper import ErrorKind, Resolver, ScrapeLimits, ScrapeOutcome, Scraper
from tests.inventory.badservers import gzip_bomb, raw_listener, send_body, serving, stream_forever

LOOPBACK = OutboundPolicy(allow_loopback=True)
VALID = b"# TYPE up gauge\nup 1\n"


def scrape(
    url: str,
    *,
    limits: ScrapeLimits | None = None,
    policy: OutboundPolicy = LOOPBACK,
    resolver: Resolver | None = None,
) -> ScrapeOutcome:
    scraper = Scraper(policy=policy, limits=limits or ScrapeLimits(), resolver=resolver)
    return asyncio.run(scraper.scrape_many([url]))[0]


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with start_fleet(replicas=2, scenario="steady", dp=2, seed=3) as running:
        yield running


def test_scrape_of_a_fleetsim_replica_returns_its_families(fleet: Fleet) -> None:
    url = next(t.url for t in fleet.targets if t.kind == "vllm")
    outcome = scrape(url)
    assert outcome.ok, outcome.error
    assert outcome.inventory is not None
    names = set(outcome.inventory.families)
    assert "vllm:kv_cache_usage_perc" in names
    assert "vllm:time_to_first_token_seconds" in names
    assert outcome.sample_count > 100
    assert outcome.body_bytes > 10_000


def test_scrape_many_covers_every_kind_of_fleetsim_target(fleet: Fleet) -> None:
    scraper = Scraper(policy=LOOPBACK)
    outcomes = asyncio.run(scraper.scrape_many([t.url for t in fleet.targets]))
    assert [o.error for o in outcomes] == [None] * len(fleet.targets)


def test_scrape_reuses_its_label_cache_across_cycles() -> None:
    # A fixed payload: a live replica may legitimately change its layout between scrapes.
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(
            h, b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0"} 3\n'
        )

    scraper = Scraper(policy=LOOPBACK)
    with serving(respond) as server:
        url = server.url()
        (first,) = asyncio.run(scraper.scrape_many([url]))
        cache = scraper.label_caches[url]
        size = len(cache)
        (second,) = asyncio.run(scraper.scrape_many([url]))
    assert size > 0
    assert scraper.label_caches[url] is cache
    # Same layout: the second outcome carries only values, not the layout again.
    assert first.frame is not None and second.frame is not None
    assert first.frame.layout_blob is not None and first.inventory is not None
    assert (second.frame.layout_blob, second.inventory) == (None, None)
    assert second.frame.digest == first.frame.digest


def test_scrape_rejects_an_html_login_page_without_echoing_it() -> None:
    page = b"<html><body>Sign in to SecretCorp</body></html>"

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, page, content_type="text/html")

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.NOT_METRICS
    assert outcome.error.message == "not a metrics response (Content-Type: text/html)"
    assert "SecretCorp" not in outcome.error.message


def test_scrape_rejects_html_served_as_text_plain() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, b"\n  <!doctype html><p>login</p>")

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.error is not None
    assert outcome.error.message == "not a metrics response (looks like HTML)"


def test_scrape_rejects_a_blank_content_type() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, VALID, content_type="")

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.error is not None
    assert outcome.error.message == "not a metrics response (Content-Type: none)"


def test_scrape_asks_for_the_classic_text_format_and_gzip() -> None:
    seen: list[dict[str, str]] = []

    def respond(h: BaseHTTPRequestHandler) -> None:
        seen.append(dict(h.headers))
        send_body(h, VALID)

    with serving(respond) as server:
        assert scrape(server.url()).ok
    assert seen[0]["Accept"].startswith("text/plain; version=0.0.4")
    assert seen[0]["Accept-Encoding"] == "gzip"


def test_scrape_decodes_gzip_bodies() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, gzip.compress(VALID), headers={"Content-Encoding": "gzip"})

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.ok
    assert outcome.inventory is not None
    assert list(outcome.inventory.families) == ["up"]


def test_scrape_stops_a_huge_body_at_the_cap_with_bounded_memory() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        stream_forever(h, b"# " + b"x" * 65_533 + b"\n", limit_bytes=200 * 1024 * 1024)

    limits = ScrapeLimits(body_bytes=4 * 1024 * 1024)
    with serving(respond) as server:
        tracemalloc.start()
        outcome = scrape(server.url(), limits=limits)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TOO_LARGE
    assert outcome.error.message == f"body size limit exceeded ({4 * 1024 * 1024} bytes)"
    assert peak < 16 * 1024 * 1024


def test_scrape_applies_the_cap_to_decompressed_bytes_of_a_gzip_bomb() -> None:
    bomb = gzip_bomb(64 * 1024 * 1024)

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, bomb, headers={"Content-Encoding": "gzip"})

    limits = ScrapeLimits(body_bytes=1024 * 1024)
    with serving(respond) as server:
        tracemalloc.start()
        outcome = scrape(server.url(), limits=limits)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert len(bomb) < 200_000
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TOO_LARGE
    assert peak < 8 * 1024 * 1024


def test_scrape_ends_a_slow_drip_at_the_total_deadline() -> None:
    hung_up = threading.Event()

    def respond(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.send_header("Content-Length", "100000")
        h.end_headers()
        # One byte per 100 ms: every read succeeds, so only a total deadline ends it.
        while not hung_up.wait(0.1):
            h.wfile.write(b"#")
            h.wfile.flush()

    with serving(respond) as server:
        outcome = scrape(server.url(), limits=ScrapeLimits(timeout_seconds=1.0))
        hung_up.set()
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TIMEOUT
    assert outcome.error.message == "no complete response within 1s"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_scrape_never_follows_redirects(status: int) -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, b"", status=status, headers={"Location": "http://169.254.169.254/"})

    with serving(respond) as server:
        outcome = scrape(server.url())
        assert len(server.requests) == 1
    assert outcome.error is not None
    assert outcome.error.message == f"redirect not followed (HTTP {status})"


def test_scrape_reports_http_errors_by_status() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, b"internal secret stack trace", status=500)

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.error is not None
    assert (outcome.error.kind, outcome.error.message) == (ErrorKind.HTTP_STATUS, "HTTP 500")


def test_scrape_reports_a_parse_error_with_its_line_and_keeps_nothing() -> None:
    body = b"".join(b"ok_%d 1\n" % i for i in range(500)) + b"bad line here\n"

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, body)

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.frame is None
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.PARSE_ERROR
    assert outcome.error.message.startswith("parse error at line 501:")


def test_scrape_rejects_invalid_utf8_in_a_label_value() -> None:
    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, b'x{tenant="\xff"} 1\n')

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.PARSE_ERROR


def test_scrape_fails_whole_when_over_the_sample_limit() -> None:
    body = b"".join(b'x{i="%d"} 1\n' % i for i in range(600))

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, body)

    with serving(respond) as server:
        outcome = scrape(server.url(), limits=ScrapeLimits(samples=500))
    assert outcome.frame is None
    assert outcome.error is not None
    assert outcome.error.message == "more than 500 samples (sample limit)"


def test_scrape_fails_on_an_overlong_label_value() -> None:
    body = b'x{tenant="' + b"a" * 5000 + b'"} 1\n'

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, body)

    with serving(respond) as server:
        outcome = scrape(server.url())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.LABEL_LIMIT
    assert outcome.error.message == "x: label 'tenant' value over 4096 bytes"


def test_scrape_reports_refused_connections(closed_port: int) -> None:
    outcome = scrape(f"http://127.0.0.1:{closed_port}/metrics")
    assert outcome.error is not None
    assert (outcome.error.kind, outcome.error.message) == (ErrorKind.REFUSED, "connection refused")


def test_scrape_of_an_open_non_http_port_fails_cleanly() -> None:
    with raw_listener(b"SSH-2.0-OpenSSH_9.2\r\n") as port:
        outcome = scrape(f"http://127.0.0.1:{port}/metrics")
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.CONNECTION
    assert "SSH" not in outcome.error.message


def test_scrape_blocks_loopback_unless_the_policy_allows_it(closed_port: int) -> None:
    outcome = scrape(f"http://127.0.0.1:{closed_port}/metrics", policy=OutboundPolicy())
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.BLOCKED
    assert outcome.error.message.startswith("blocked by policy:")


@pytest.mark.parametrize(
    ("url", "answer", "says"),
    [
        (
            "http://127.0.0.1:9/metrics",
            None,
            "blocked by policy: loopback address 127.0.0.1 "
            "(set FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=true to allow it)",
        ),
        (
            "http://10.20.0.5:8000/metrics",
            None,
            "blocked by policy: private address (RFC 1918) 10.20.0.5 is not in the allow-list "
            "(add it to FLEETSCOPE_OUTBOUND_ALLOW to allow it)",
        ),
        (
            "http://vllm-0.fleet.example/metrics",
            "10.20.0.5",
            "blocked by policy: private address (RFC 1918) 10.20.0.5 is not in the allow-list "
            "(add it to FLEETSCOPE_OUTBOUND_ALLOW to allow it)",
        ),
        # No setting lets the metadata service through, so none is named.
        (
            "http://169.254.169.254/latest",
            None,
            "blocked by policy: cloud metadata address 169.254.169.254",
        ),
    ],
)
def test_scrape_refusals_name_the_setting_that_would_allow_them(
    url: str, answer: str | None, says: str
) -> None:
    def resolve(host: str, port: int) -> Sequence[str]:
        return [answer or host]

    outcome = scrape(url, policy=OutboundPolicy(), resolver=resolve)
    assert outcome.error is not None
    assert (outcome.error.kind, outcome.error.message) == (ErrorKind.BLOCKED, says)


def test_scrape_checks_the_resolved_address_at_connect_time() -> None:
    """DNS rebinding: the name passed registration but now resolves to the metadata service."""
    answers: list[Sequence[str]] = [["169.254.169.254"]]

    def rebinding(host: str, port: int) -> Sequence[str]:
        return answers[0]

    outcome = scrape("http://metrics.fleet.example/metrics", resolver=rebinding)
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.BLOCKED


def test_scrape_fails_closed_when_the_name_does_not_resolve() -> None:
    def broken(host: str, port: int) -> Sequence[str]:
        raise OSError("resolver down")

    outcome = scrape("http://metrics.fleet.example/metrics", resolver=broken)
    assert outcome.error is not None
    assert (outcome.error.kind, outcome.error.message) == (
        ErrorKind.DNS,
        "cannot resolve host 'metrics.fleet.example'",
    )
