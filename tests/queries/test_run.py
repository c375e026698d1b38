"""`run_query` / `run_queries` with the Prometheus backend: failures and partial answers
become results, never exceptions. A tiny local HTTP server stands in for Prometheus
where a real one cannot produce the answer on demand (warnings, NaN values)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from django.test import override_settings

from queries import Gauge, Quantile, Rate, Scope, Spec, Window, run_queries, run_query
from tests.inventory.badservers import json_answer, serving
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}
TYPES = {"vllm:num_requests_running": "gauge", "vllm:generation_tokens": "counter"}
WINDOW = Window(at(0), at(20), 10)


def small_fleet() -> Scope:
    fleet = fleet_named()
    scrapes = [
        (s, [("vllm:num_requests_running", M, 3.0), ("vllm:generation_tokens_total", M, s)])
        for s in (0, 10, 20)
    ]
    endpoint_with_scrapes(fleet, "a:1", scrapes, types=TYPES)
    return Scope(fleet)


def test_without_prometheus_url_the_prometheus_backend_says_so() -> None:
    with override_settings(PROMETHEUS_URL=None):
        result = run_query(Gauge("running"), scope=small_fleet(), window=WINDOW,
                           backend="prometheus")  # fmt: skip
    assert (result.status, result.reason) == ("error", "no-prometheus")


def test_a_dead_prometheus_is_an_error_result_for_every_query_of_the_page(
    closed_port: int,
) -> None:
    specs: dict[str, Spec] = {"running": Gauge("running"), "tokens": Rate("generation_tokens")}
    with override_settings(PROMETHEUS_URL=f"http://127.0.0.1:{closed_port}"):
        results = run_queries(specs, scope=small_fleet(), window=WINDOW, backend="prometheus")
    assert {n: (r.status, r.reason) for n, r in results.items()} == {
        "running": ("error", "prometheus-unavailable"),
        "tokens": ("error", "prometheus-unavailable"),
    }


def test_keys_that_do_not_resolve_never_reach_prometheus(closed_port: int) -> None:
    with override_settings(PROMETHEUS_URL=f"http://127.0.0.1:{closed_port}"):
        result = run_query(Quantile("ttft", 0.9), scope=small_fleet(), window=WINDOW,
                           backend="prometheus")  # fmt: skip
    assert (result.status, result.reason) == ("unavailable", "not-exposed")


def test_a_warning_answer_is_partial_and_nan_points_are_gaps() -> None:
    seen: list[str] = []

    def respond(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.path)
        if handler.path.startswith("/api/v1/query?"):  # the page's `up` check: all well
            body_up = {"status": "success", "data": {"resultType": "vector", "result": []}}
            json_answer(200, body_up)(handler)
            return
        stamps = [t.timestamp() for t in (at(0), at(10), at(20))]
        body = {
            "status": "success",
            "warnings": ["remote store eu-1 did not answer"],
            "data": {"resultType": "matrix", "result": [
                {"metric": {}, "values": [[stamps[0], "3"], [stamps[1], "NaN"],
                                          [stamps[2], "+Inf"]]},
            ]},
        }  # fmt: skip
        data = json.dumps(body).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        result = run_query(Gauge("running"), scope=small_fleet(), window=WINDOW,
                           backend="prometheus")  # fmt: skip
    assert result.status == "partial"
    assert result.series[0].values == (3.0, None, None)
    assert "prometheus: remote store eu-1 did not answer" in result.warnings
    assert "NaN" not in result.to_json() and "Infinity" not in result.to_json()
    assert [path for path in seen if path.startswith("/api/v1/query_range?")]
