"""What Prometheus has seen lately counts as exposure: a real Prometheus holding a series
no endpoint of the fleet exposes (written the way its scrape loop writes, through remote
write) keeps a rule on that series live, and names are listed as the reference client
lists them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

import pytest
from django.test import override_settings
from prometheus_api_client import PrometheusConnect

from blindspots.prometheus import names_from_prometheus, names_held_by_prometheus
from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import TimeSeries, remote_write
from inventory.prometheus import READ_ONLY_PATHS
from inventory.scraping import REQUEST_OBSERVERS
from tests.blindspots.audit_fleets import steady_fleet
from tests.inventory.badservers import Responder, html_error_page, json_answer, send_body, serving

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]

SEEN = "team:requests_per_second:rate5m"
OLD = "team:ancient_metric"


def series(name: str, minutes_ago: float) -> TimeSeries:
    at = int((time.time() - minutes_ago * 60) * 1000)
    return TimeSeries((("__name__", name), ("job", "recorder")), ((1.0, at),))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_remote_write_prometheus(tmp_path_factory.mktemp("names")) as url:
        remote_write(url, [series(SEEN, 1), series(OLD, 30)])
        yield url


def test_names_are_those_with_a_sample_in_the_last_five_minutes(prometheus: str) -> None:
    names, errors = names_from_prometheus([SEEN, OLD, "never:written"], prometheus)
    assert errors == [] and names == frozenset({SEEN})
    # The reference client lists every name Prometheus holds, the stale one too.
    listed = set(PrometheusConnect(url=prometheus, timeout=10).all_metrics())
    assert {SEEN, OLD} <= listed


def test_a_prometheus_that_cannot_answer_is_one_error(closed_port: int) -> None:
    names, errors = names_from_prometheus([SEEN], f"http://127.0.0.1:{closed_port}")
    assert names is None
    (error,) = errors
    assert error.name == "Prometheus metric names" and error.reason


def test_a_rule_on_a_series_prometheus_sees_is_live_and_one_it_does_not_is_blind(
    prometheus: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from blindspots import AuditPaths, audit_fleet

    fleet = steady_fleet(tmp_path_factory)
    rules = tmp_path_factory.mktemp("rules") / "team.yml"
    rules.write_text(
        "groups:\n- name: team\n  rules:\n"
        f"  - alert: SeenHigh\n    expr: {SEEN} > 100\n"
        f"  - alert: OldHigh\n    expr: {OLD} > 100\n"
    )
    with override_settings(PROMETHEUS_URL=prometheus):
        report, _ = audit_fleet(
            fleet, paths=AuditPaths(rules=(rules,)), prometheus_rules=True, store=False
        )
    results = {r.item.name: r for r in report.items}
    assert results["SeenHigh"].verdict == "live"
    # Prometheus still holds OLD's samples from 30 minutes ago: its series stopped, so the
    # rule went blind; it was not wrong from the start.
    assert results["OldHigh"].verdict == "blind"
    (old,) = results["OldHigh"].selectors
    assert "held it within the last 7 days" in old.why
    assert "Prometheus metric names" in report.inputs
    assert "Prometheus metric names held" in report.inputs


def test_names_held_are_every_name_of_the_last_days_as_the_reference_client_lists_them(
    prometheus: str,
) -> None:
    held, errors = names_held_by_prometheus(prometheus)
    assert errors == []
    assert held is not None and {SEEN, OLD} <= held and "never:written" not in held
    assert held == set(PrometheusConnect(url=prometheus, timeout=10).all_metrics())


def test_names_held_are_read_with_one_get_on_the_label_values_path(prometheus: str) -> None:
    seen: list[tuple[str, str]] = []
    REQUEST_OBSERVERS.append(lambda method, url: seen.append((method, url)))
    try:
        names_held_by_prometheus(prometheus)
    finally:
        REQUEST_OBSERVERS.pop()
    assert [(m, urlsplit(u).path) for m, u in seen] == [("GET", "/api/v1/label/__name__/values")]
    assert urlsplit(seen[0][1]).path in READ_ONLY_PATHS


def test_a_prometheus_that_cannot_list_names_is_one_error(closed_port: int) -> None:
    held, errors = names_held_by_prometheus(f"http://127.0.0.1:{closed_port}")
    assert held is None
    (error,) = errors
    assert error.name == "Prometheus metric names held"
    assert error.reason.startswith("prometheus unreachable")


def html_page(handler: BaseHTTPRequestHandler) -> None:
    send_body(handler, b"<html><body>not Prometheus</body></html>", content_type="text/html")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (html_page, "the wrong shape: /api/v1/label/__name__/values gave no list of names"),
        (json_answer(200, {"status": "success", "data": [1, 2]}), "gave no list of names"),
        (html_error_page, "prometheus answered HTTP 502"),
        (json_answer(503, {"status": "error"}), "prometheus answered HTTP 503"),
    ],
)
def test_a_bad_answer_to_the_names_path_is_one_error(answer: Responder, reason: str) -> None:
    with serving(answer) as server:
        held, errors = names_held_by_prometheus(server.url(""))
    assert held is None
    (error,) = errors
    assert reason in error.reason
    assert "<" not in error.reason  # never the body
