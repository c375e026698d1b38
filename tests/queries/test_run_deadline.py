"""A batch of Prometheus queries returns by its deadline, whatever Prometheus does.

A real Prometheus cannot be made slow on demand, so a stand-in HTTP server answers
some queries at once and holds the others until the test ends. The per-query timeout is
set far above the deadline in each test, so only the deadline can be what cut them off;
elapsed times are checked against the deadline with a generous margin, as a bound the
code promises, not as a performance figure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import override_settings

from devtools.waiting import wait_until
from queries import Gauge, Rate, Scope, Spec, Window, page_deadline, run_queries
from tests.inventory.badservers import BadServer, json_answer, serving
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}
TYPES = {"vllm:num_requests_running": "gauge", "vllm:generation_tokens": "counter"}
WINDOW = Window(at(0), at(20), 10)
SPECS: dict[str, Spec] = {"running": Gauge("running"), "tokens": Rate("generation_tokens")}
DEADLINE = 1.0
MARGIN = 5.0  # generous: the machine is shared, the promise is "about the deadline"
LATE = "Prometheus did not answer within the page's 1 s deadline"


def small_fleet() -> Scope:
    fleet = fleet_named()
    scrapes = [
        (s, [("vllm:num_requests_running", M, 3.0), ("vllm:generation_tokens_total", M, s)])
        for s in (0, 10, 20)
    ]
    endpoint_with_scrapes(fleet, "a:1", scrapes, types=TYPES)
    return Scope(fleet)


def ones(handler: BaseHTTPRequestHandler) -> None:
    """A well-formed answer: an empty `up` vector, or 1.0 at every step of a range query."""
    if handler.path.startswith("/api/v1/query?"):
        data: dict = {"resultType": "vector", "result": []}
    else:
        asked = parse_qs(urlsplit(handler.path).query)
        start, end, step = (float(asked[k][0]) for k in ("start", "end", "step"))
        points = [[start + i * step, "1"] for i in range(int((end - start) / step) + 1)]
        data = {
            "resultType": "matrix",
            "result": [{"metric": {"instance": "a:1"}, "values": points}],
        }
    json_answer(200, {"status": "success", "data": data})(handler)


@pytest.fixture
def slow_prometheus() -> Iterator[Callable[[Callable[[str], bool]], BadServer]]:
    """A stand-in Prometheus: queries for which `held(path)` is true get no answer until the
    test ends; the others are answered at once."""
    release = threading.Event()
    with ExitStack() as stack:

        def start(held: Callable[[str], bool]) -> BadServer:
            def respond(handler: BaseHTTPRequestHandler) -> None:
                if held(handler.path):
                    release.wait(60)
                    return
                ones(handler)

            return stack.enter_context(serving(respond))

        try:
            yield start
        finally:
            release.set()  # held requests are let go before the servers stop


def deadline_settings(server: BadServer) -> override_settings:
    return override_settings(
        PROMETHEUS_URL=server.url(""),
        PROMETHEUS_BATCH_DEADLINE_SECONDS=DEADLINE,
        PROMETHEUS_TIMEOUT_SECONDS=30.0,
    )


def test_a_batch_returns_at_its_deadline_and_every_late_result_says_so(
    slow_prometheus: Callable[[Callable[[str], bool]], BadServer],
) -> None:
    server = slow_prometheus(lambda path: True)
    scope = small_fleet()
    started = time.monotonic()
    with deadline_settings(server):
        results = run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")
    assert time.monotonic() - started < DEADLINE + MARGIN
    for result in results.values():
        assert (result.status, result.reason, result.message) == ("error", "deadline", LATE)
        assert result.series == ()


def test_answers_in_by_the_deadline_are_kept_and_only_the_late_ones_fail(
    slow_prometheus: Callable[[Callable[[str], bool]], BadServer],
) -> None:
    server = slow_prometheus(lambda path: "generation_tokens" in path)
    scope = small_fleet()
    with deadline_settings(server):
        results = run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")
    assert results["running"].status == "ok"
    assert results["running"].series[0].values[0] == 1.0
    assert (results["tokens"].reason, results["tokens"].message) == ("deadline", LATE)


def test_a_late_up_answer_leaves_the_figures_drawn_and_says_scrapes_are_unknown(
    slow_prometheus: Callable[[Callable[[str], bool]], BadServer],
) -> None:
    server = slow_prometheus(lambda path: path.startswith("/api/v1/query?"))
    scope = small_fleet()
    with deadline_settings(server):
        results = run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")
    running = results["running"]
    assert running.status == "partial"
    assert f"failed scrapes unknown: {LATE}" in running.warnings


def test_batches_of_one_page_share_its_deadline_and_a_spent_one_sends_nothing(
    slow_prometheus: Callable[[Callable[[str], bool]], BadServer],
) -> None:
    server = slow_prometheus(lambda path: True)
    scope = small_fleet()
    with deadline_settings(server), page_deadline():
        first = run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")
        sent = len(server.requests)
        started = time.monotonic()
        second = run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")
        waited = time.monotonic() - started
    assert {r.reason for r in (*first.values(), *second.values())} == {"deadline"}
    assert len(server.requests) == sent  # the second batch asked nothing
    assert waited < MARGIN  # and did not wait a deadline of its own


def test_requests_still_out_at_the_deadline_end_soon_after_not_at_their_own_timeout(
    slow_prometheus: Callable[[Callable[[str], bool]], BadServer],
) -> None:
    server = slow_prometheus(lambda path: True)
    scope = small_fleet()
    with deadline_settings(server):
        run_queries(SPECS, scope=scope, window=WINDOW, backend="prometheus")

    def workers_gone() -> bool | None:
        alive = [t for t in threading.enumerate() if t.name.startswith("promql")]
        return not alive or None

    # The 30 s per-query timeout is capped to just past the deadline: the workers end
    # within seconds though the stand-in never answers them.
    wait_until(workers_gone, timeout=DEADLINE + MARGIN, what="the query threads to end")
    # Prometheus was asked to give up by then too.
    timeouts = {parse_qs(urlsplit(path).query)["timeout"][0] for _, path in server.requests}
    assert all(float(t.removesuffix("s")) <= DEADLINE + 1.0 for t in timeouts), timeouts
