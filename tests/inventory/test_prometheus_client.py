"""The Prometheus client: read-only GETs, a mandatory timeout, and errors as small types.

Faults a real Prometheus produces on demand (a bad query, a closed port) are tried
against the real one; the rest (a 503 timeout, a proxy's HTML 502, a 422, a
success with warnings, a success of the wrong shape, a server too slow to answer)
come from a tiny local HTTP server, because Prometheus cannot be made to produce them
when asked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from devtools.prometheus import file_sd_config, running_prometheus
from inventory.prometheus import (
    PrometheusBadAnswer,
    PrometheusBadQuery,
    PrometheusServerError,
    PrometheusTimeout,
    PrometheusUnavailable,
    excerpt,
    prometheus_ping,
    prometheus_query,
    prometheus_query_range,
)
from queries import Window
from tests.inventory.badservers import html_error_page, json_answer, serving, stream_forever

NOW = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base: Path = tmp_path_factory.mktemp("prom")
    with running_prometheus(file_sd_config(base, []), base / "data") as url:
        yield url


def query_range(url: str, query: str = "up", timeout: float = 5) -> object:
    return prometheus_query_range(
        url, query=query, start=NOW - timedelta(minutes=5), end=NOW, step_seconds=15,
        timeout_seconds=timeout,
    )  # fmt: skip


@pytest.mark.prometheus
def test_a_real_prometheus_answers_a_range_query_through_the_read_only_guard(
    prometheus: str, requests_seen: list[tuple[str, str]]
) -> None:
    answer = prometheus_query_range(
        prometheus, query="vector(1)", start=NOW - timedelta(minutes=1), end=NOW,
        step_seconds=30, timeout_seconds=5,
    )  # fmt: skip
    assert answer.result_type == "matrix"
    assert [v for _, v in answer.result[0]["values"]] == ["1", "1", "1"]
    assert answer.warnings == ()
    assert requests_seen and all(method == "GET" for method, _ in requests_seen)
    assert "/api/v1/query_range?" in requests_seen[0][1]
    prometheus_ping(prometheus, timeout_seconds=5)


@pytest.mark.prometheus
@pytest.mark.parametrize("microseconds", [0, 1500, 2500, 999_500, 123_456])
def test_a_real_prometheus_answers_on_the_windows_grid_whatever_the_start_microseconds(
    prometheus: str, microseconds: int
) -> None:
    # At 1500 us, t * 1000 rounds up but "%.3f" of t rounds down: sending that text put
    # every point of the answer 1 ms off the grid, and the page showed no data at all.
    window = Window(NOW + timedelta(microseconds=microseconds), NOW + timedelta(minutes=1), 30)
    answer = prometheus_query_range(
        prometheus, query="vector(1)", start=window.start, end=window.end,
        step_seconds=window.step_seconds, timeout_seconds=5,
    )  # fmt: skip
    assert [t for t, _ in answer.result[0]["values"]] == window.timestamps()


@pytest.mark.prometheus
def test_a_bad_query_is_rejected_by_the_real_server_as_bad_data_and_never_retried(
    prometheus: str, requests_seen: list[tuple[str, str]]
) -> None:
    with pytest.raises(PrometheusBadQuery, match=r"rejected the query \(bad_data\)") as caught:
        prometheus_query(prometheus, query="sum(rate(x[5m]", at=NOW, timeout_seconds=5)
    assert caught.value.retryable is False
    assert len(requests_seen) == 1


def test_a_closed_port_is_unavailable_and_worth_retrying(closed_port: int) -> None:
    with pytest.raises(PrometheusUnavailable, match="unreachable: ConnectError") as caught:
        query_range(f"http://127.0.0.1:{closed_port}")
    assert caught.value.retryable is True


def test_a_503_timeout_from_prometheus_is_a_timeout() -> None:
    body = {"status": "error", "errorType": "timeout", "error": "query timed out in expression"}
    with serving(json_answer(503, body)) as server, pytest.raises(PrometheusTimeout) as caught:
        query_range(server.url(""))
    assert "timed out on the server" in str(caught.value) and caught.value.retryable


def test_a_422_execution_error_is_a_bad_query() -> None:
    body = {"status": "error", "errorType": "execution", "error": "many-to-many matching"}
    with serving(json_answer(422, body)) as server, pytest.raises(PrometheusBadQuery):
        query_range(server.url(""))


def test_an_html_502_from_a_proxy_is_a_server_error_without_its_body() -> None:
    with serving(html_error_page) as server, pytest.raises(PrometheusServerError) as caught:
        query_range(server.url(""))
    assert str(caught.value) == "prometheus answered HTTP 502 with an HTML page"


def test_success_with_warnings_comes_back_as_a_partial_answer() -> None:
    body = {
        "status": "success",
        "data": {"resultType": "matrix", "result": []},
        "warnings": ["store\x1b[31m eu-1 unreachable"],
    }
    with serving(json_answer(200, body)) as server:
        answer = prometheus_query_range(
            server.url(""), query="up", start=NOW, end=NOW, step_seconds=1, timeout_seconds=5
        )
    assert answer.warnings == ("store\\x1b[31m eu-1 unreachable",)


BIG = "x" * 100_000


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (None, "no data object"),
        (BIG, "no data object"),
        ({"resultType": "matrix", "result": {"a": BIG}}, "result is not a list"),
        ({"resultType": BIG, "result": []}, "result type 'xxxxxxxxxxxxxxxxxxxx...' where a matrix"),
        ({"resultType": "matrix", "result": [BIG]}, "a series is not an object"),
        ({"resultType": "matrix", "result": [{"metric": BIG}]}, "labels are not an object"),
        ({"resultType": "matrix", "result": [{"metric": {}, "values": BIG}]}, "values are not"),
    ],
)
def test_success_in_the_wrong_shape_is_a_bad_answer_that_names_the_fault_not_the_body(
    data: object, what: str
) -> None:
    # A stand-in: a real Prometheus never answers success in these shapes.
    body = {"status": "success"} if data is None else {"status": "success", "data": data}
    with serving(json_answer(200, body)) as server, pytest.raises(PrometheusBadAnswer) as caught:
        query_range(server.url(""))
    assert what in str(caught.value) and len(str(caught.value)) < 200
    assert (caught.value.reason, caught.value.retryable) == ("bad-answer", False)


def test_an_instant_answer_needs_sample_pairs() -> None:
    rows = [{"metric": {"instance": "a:1"}, "value": "1"}]
    body = {"status": "success", "data": {"resultType": "vector", "result": rows}}
    with serving(json_answer(200, body)) as server, pytest.raises(PrometheusBadAnswer):
        prometheus_query(server.url(""), query="up", at=NOW, timeout_seconds=5)


def test_a_server_slower_than_the_timeout_is_cut_off() -> None:
    release = threading.Event()

    def respond(handler: BaseHTTPRequestHandler) -> None:
        release.wait(10)

    with serving(respond) as server:
        try:
            with pytest.raises(PrometheusTimeout, match="timed out after 0.3s"):
                query_range(server.url(""), timeout=0.3)
        finally:
            release.set()


def test_only_read_only_api_paths_and_positive_timeouts_are_accepted() -> None:
    with pytest.raises(ValueError, match="positive timeout"):
        query_range("http://127.0.0.1:9", timeout=0)
    with pytest.raises(ValueError, match="timezone-aware"):
        naive = datetime.fromisoformat("2026-01-01T00:00:00")
        prometheus_query("http://127.0.0.1:9", query="up", at=naive, timeout_seconds=1)


def test_error_excerpts_are_short_single_line_and_escaped() -> None:
    text = excerpt("a\nb\u202e" + "x" * 500)
    assert text.startswith("a b\\u202e") and text.endswith("...") and len(text) < 200


def test_metric_names_stop_reading_an_answer_past_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # prometheus-api-client reads `response.json()` whole; the session caps it first.
    from inventory import prometheus as client

    monkeypatch.setattr(client, "MAX_RESPONSE_BYTES", 1024 * 1024)
    now = datetime.now(UTC)

    def endless(handler: BaseHTTPRequestHandler) -> None:
        stream_forever(handler, b'"name",' * 1000, limit_bytes=4 * 1024 * 1024)

    with (
        serving(endless) as server,
        pytest.raises(PrometheusServerError, match="answer exceeds 1 MiB"),
    ):
        client.prometheus_metric_names(
            server.url(""), start=now - timedelta(days=1), end=now, timeout_seconds=10
        )
    names = {"status": "success", "data": ["up", "vllm:num_requests_running"]}
    with serving(json_answer(200, names)) as server:
        found = client.prometheus_metric_names(
            server.url(""), start=now - timedelta(days=1), end=now, timeout_seconds=10
        )
    assert found == {"up", "vllm:num_requests_running"}
