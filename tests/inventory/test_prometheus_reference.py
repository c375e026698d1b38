"""The Prometheus client against prometheus-api-client, the library it stands in for.

Both ask the same real Prometheus (Debian's package, a fleetsim history with a
cold restart backfilled by promtool) the same queries; FleetScope's client must
hand back exactly what the library does. The last tests pin why the library is
only the reference here (see inventory/prometheus.py): on the same answers it
drops Prometheus' warnings and retries server errors on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_api_client import PrometheusConnect
from requests.exceptions import RetryError
from urllib3.util.retry import Retry

from devtools.prometheus import backfilled_prometheus
from fleetsim.history import History
from inventory.prometheus import PrometheusServerError, prometheus_query, prometheus_query_range
from tests.inventory.badservers import json_answer, serving

# A rate over a counter reset, a quantile over buckets, a ratio of gauges, a label value
# with quotes and markup, and series that exist only on some replicas.
RANGE_QUERIES = (
    "sum by (instance) (rate(vllm:generation_tokens_total[2m]))",
    "histogram_quantile(0.99, sum by (le, model_name) "
    "(rate(vllm:e2e_request_latency_seconds_bucket[5m])))",
    "avg by (model_name) (vllm:kv_cache_usage_perc)",
    'label_replace(vllm:num_requests_running, "note", "<b>\\"q\\"</b> ü", "", "")',
    "resets(vllm:generation_tokens_total[10m]) > 0",
)
INSTANT_QUERIES = ("count(up == 1)", "topk(2, vllm:num_requests_waiting)", "vector(1) / 0")


@pytest.fixture(scope="module")
def history_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    base: Path = tmp_path_factory.mktemp("reference")
    history = History(replicas=2, scenario="cold-restart", hours=0.5, at=600.0, duration=600.0)
    manifest = history.write_openmetrics(base / "fleet.om")
    with backfilled_prometheus(base / "fleet.om", base) as url:
        yield url, manifest


def reference(url: str) -> PrometheusConnect:
    # No retries, so a failure in the library shows as itself.
    return PrometheusConnect(url=url, retry=Retry(total=0), timeout=10)


def span(manifest: dict) -> tuple[datetime, datetime]:
    # Whole seconds: the library rounds range bounds to them.
    start = datetime.fromtimestamp(round(manifest["fleet_start"]), UTC) + timedelta(minutes=10)
    return start, start + timedelta(minutes=15)


@pytest.mark.prometheus
@pytest.mark.parametrize("query", RANGE_QUERIES)
def test_range_answers_are_what_prometheus_api_client_returns(
    history_prometheus: tuple[str, dict], query: str
) -> None:
    url, manifest = history_prometheus
    start, end = span(manifest)
    ours = prometheus_query_range(
        url, query=query, start=start, end=end, step_seconds=15, timeout_seconds=10
    )
    theirs = reference(url).custom_query_range(
        query, start_time=start, end_time=end, step="15", params={"timeout": "10s"}
    )
    assert ours.result_type == "matrix"
    assert ours.result and ours.result == theirs
    assert ours.warnings == ()


@pytest.mark.prometheus
@pytest.mark.parametrize("query", INSTANT_QUERIES)
def test_instant_answers_are_what_prometheus_api_client_returns(
    history_prometheus: tuple[str, dict], query: str
) -> None:
    url, manifest = history_prometheus
    _, at = span(manifest)
    ours = prometheus_query(url, query=query, at=at, timeout_seconds=10)
    theirs = reference(url).custom_query(query, params={"time": f"{at.timestamp():.3f}"})
    assert ours.result_type == "vector"
    assert ours.result and ours.result == theirs


WARNED = {
    "status": "success",
    "data": {"resultType": "matrix", "result": []},
    "warnings": ["remote store eu-1 unreachable: answer is partial"],
}
AT = datetime(2026, 3, 1, tzinfo=UTC)


def test_warnings_the_library_drops_reach_the_caller() -> None:
    with serving(json_answer(200, WARNED)) as server:
        theirs = reference(server.url("")).custom_query_range(
            "up", start_time=AT, end_time=AT, step="15"
        )
        ours = prometheus_query_range(
            server.url(""), query="up", start=AT, end=AT, step_seconds=15, timeout_seconds=5
        )
    assert theirs == []  # a partial answer that looks complete
    assert ours.warnings == ("remote store eu-1 unreachable: answer is partial",)


def test_a_503_is_asked_once_where_the_library_by_default_asks_again() -> None:
    body = {"status": "error", "errorType": "unavailable", "error": "<html>secret</html>"}
    with serving(json_answer(503, body)) as server:
        # The library's default retries, with their sleeps between attempts taken out
        # (through its session's adapter: no public setting) to keep the test quick.
        library = PrometheusConnect(url=server.url(""), timeout=10)
        library._session.adapters[server.url("")].max_retries.backoff_factor = 0
        with pytest.raises(RetryError, match="too many 503 error responses"):
            library.custom_query("up")
        asked_by_library = len(server.requests)
        with pytest.raises(PrometheusServerError) as caught:
            prometheus_query(server.url(""), query="up", at=AT, timeout_seconds=5)
        asked_by_us = len(server.requests) - asked_by_library
    assert asked_by_library > 1 and asked_by_us == 1
    assert "secret" not in str(caught.value)
