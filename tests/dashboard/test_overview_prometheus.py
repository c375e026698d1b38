"""The overview when Prometheus fails: each panel says how, other panels keep working,
the outage has a start time and each panel its last good time, and nothing is drawn as 0.

A real Prometheus (Debian's package) is stopped mid-test for the outage. The
other failures (503, 422, an HTML error page, a hang, `success` with warnings,
`success` in the wrong shape, one failing query among many) are answers a real
Prometheus cannot be made to give on demand, so a small stand-in HTTP server gives
them, and says so.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.test import Client, override_settings
from django.utils import timezone

from dashboard.overview import OverviewRequest, overview_compute, overview_json
from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import start_fleet
from inventory.models import Fleet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from queries import Window
from tests.dashboard.replicafill import replica
from tests.inventory.badservers import html_error_page, json_answer, serving
from tests.queries.storefill import fleet_named
from tests.roles import user_with_role

Responder = Callable[[BaseHTTPRequestHandler], None]


def recent_window() -> Window:
    now = timezone.now()
    return Window(now - timedelta(minutes=2), now, 15.0)


def compute(fleet: Fleet, window: Window | None = None) -> dict:
    payload = overview_compute(OverviewRequest(fleet, window or recent_window(), "prometheus"))
    # Whatever happened, the page gets strict JSON: no NaN, no Infinity.
    json.loads(overview_json(payload), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    return payload


def by_id(payload: dict) -> dict[str, dict]:
    return {panel["id"]: panel for panel in payload["panels"]}


@pytest.mark.prometheus
@pytest.mark.django_db(transaction=True)
def test_a_prometheus_outage_shows_since_when_and_each_panels_last_good_time(
    tmp_path: Path,
) -> None:
    with start_fleet(replicas=1, scenario="steady", speed=10, seed=3) as sim:
        target = next(t for t in sim.targets if t.kind == "vllm")
        fleet = targets_import(fleet_slug="p", specs=[TargetSpec(target.url, "vllm", {})]).fleet
        fleet_scrape(fleet_id=fleet.pk)  # the inventory: which names this fleet exposes
        groups = [{"targets": [urlsplit(target.url).netloc], "labels": {}}]
        with running_prometheus(file_sd_config(tmp_path, groups), tmp_path / "data") as url:

            def scraped_enough() -> bool | None:
                answer = httpx.get(
                    f"{url}/api/v1/query", params={"query": "count_over_time(up[1m])"}
                )
                result = answer.json()["data"]["result"]
                return bool(result) and float(result[0]["value"][1]) >= 4 or None

            wait_until(scraped_enough, timeout=30, what="four Prometheus scrapes")
            with override_settings(PROMETHEUS_URL=url, PROMETHEUS_TIMEOUT_SECONDS=5.0):
                before = compute(fleet)
        # Prometheus has exited; FleetScope still points at it.
        with override_settings(PROMETHEUS_URL=url, PROMETHEUS_TIMEOUT_SECONDS=5.0):
            during = compute(fleet)
            later = compute(fleet)
    good = by_id(before)
    assert good["queue.depth"]["status"] == "ok"
    assert before["source_state"]["status"] == "ok"
    failed = by_id(during)
    for panel_id in ("queue.depth", "traffic.tokens", "latency.ttft"):
        panel = failed[panel_id]
        assert panel["status"] == "error", panel
        assert panel["reasons"] == ["prometheus-unavailable"]
        assert panel["figure"] is None  # a gap, not a line at zero
        assert any("unreachable" in note for note in panel["notes"])
    assert failed["queue.depth"]["last_good_at"] == good["queue.depth"]["last_good_at"]
    assert during["source_state"]["status"] == "down"
    assert "unreachable" in during["source_state"]["message"]
    assert later["source_state"]["since"] == during["source_state"]["since"]
    # Panels the fleet cannot show still say why, not "Prometheus is down".
    assert failed["gpu.util"]["status"] == "unavailable"


def matrix_of_ones(handler: BaseHTTPRequestHandler, warnings: list[str] | None = None) -> None:
    """A well-formed range answer: one series, 1.0 at every step of the asked window."""
    if handler.path.startswith("/api/v1/query?"):  # the page's `up` check: every scrape well
        json_answer(200, {"status": "success", "data": {"resultType": "vector", "result": []}})(
            handler
        )
        return
    asked = parse_qs(urlsplit(handler.path).query)
    start, end, step = (float(asked[k][0]) for k in ("start", "end", "step"))
    values = []
    t = start
    while t <= end + 1e-9:
        values.append([t, "1"])
        t += step
    body: dict = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"instance": "a:1"}, "values": values}
    ]}}  # fmt: skip
    if warnings:
        body["warnings"] = warnings
    json_answer(200, body)(handler)


@pytest.fixture
def fleet(db: None) -> Fleet:
    fleet = fleet_named()
    replica(fleet, "a:1")
    return fleet


FAILURES = {
    "a 503 timeout": (
        json_answer(503, {"status": "error", "errorType": "timeout", "error": "query timed out"}),
        "error", ["timeout"], "timed out on the server", True,
    ),
    "a 422 execution error": (
        json_answer(422, {"status": "error", "errorType": "execution", "error": "many-to-many"}),
        "error", ["bad-query"], "rejected the query", False,
    ),
    "an HTML error page from a proxy": (
        html_error_page, "error", ["server-error"], "HTTP 502 with an HTML page", True,
    ),
    "success with warnings": (
        lambda h: matrix_of_ones(h, ["store eu-1 unreachable"]),
        "partial", [], "prometheus: store eu-1 unreachable", False,
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(FAILURES))
def test_each_prometheus_failure_shows_its_own_state_on_the_panels(fleet: Fleet, case: str) -> None:
    respond, status, reasons, note, source_down = FAILURES[case]
    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        payload = compute(fleet)
    panel = by_id(payload)["engine.kv"]
    assert panel["status"] == status
    assert panel["reasons"] == reasons
    assert any(note in n for n in panel["notes"]), panel["notes"]
    assert not any("<script>" in n for p in payload["panels"] for n in p["notes"])
    assert (payload["source_state"]["status"] == "down") is source_down
    if status == "error":
        assert panel["figure"] is None


def test_a_prometheus_slower_than_the_timeout_is_cut_off_and_said_so(fleet: Fleet) -> None:
    release = threading.Event()
    with serving(lambda handler: release.wait(10)) as server:
        settings = override_settings(PROMETHEUS_URL=server.url(""), PROMETHEUS_TIMEOUT_SECONDS=0.3)
        try:
            with settings:
                payload = compute(fleet)
        finally:
            release.set()
    panel = by_id(payload)["latency.ttft"]
    assert panel["status"] == "error" and panel["reasons"] == ["timeout"]
    assert any("timed out after 0.3s" in n for n in panel["notes"])
    assert payload["source_state"]["status"] == "down"


def test_one_failing_query_leaves_the_other_panels_drawn(fleet: Fleet) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        if "time_to_first_token" in handler.path:
            body = {"status": "error", "errorType": "execution", "error": "out of memory"}
            json_answer(422, body)(handler)
        else:
            matrix_of_ones(handler)

    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        payload = compute(fleet)
    panels = by_id(payload)
    assert panels["latency.ttft"]["status"] == "error"
    assert panels["latency.ttft"]["reasons"] == ["bad-query"]
    for drawn in ("traffic.requests", "engine.kv"):
        assert panels[drawn]["status"] == "ok"
        assert panels[drawn]["figure"]["data"][0]["y"][0] == 1.0
    assert payload["source_state"]["status"] == "ok"
    # The stand-in saw only read-only GETs of the query APIs (range queries and `up`).
    assert {path.split("?")[0] for _, path in server.requests} == {
        "/api/v1/query_range",
        "/api/v1/query",
    }
    assert {method for method, _ in server.requests} == {"GET"}


def range_answer(handler: BaseHTTPRequestHandler, data: object) -> None:
    """A 200 `success` whose `data` is `data` for range queries; a clean `up` answer."""
    if handler.path.startswith("/api/v1/query?"):
        json_answer(200, {"status": "success", "data": {"resultType": "vector", "result": []}})(
            handler
        )
        return
    body = {"status": "success"} if data is MISSING else {"status": "success", "data": data}
    json_answer(200, body)(handler)


MISSING = object()
BIG = "x" * 200_000
POINT = [1_700_000_000, "1"]
# Valid JSON of the wrong shape: what a broken proxy, a bad gateway or another product on
# Prometheus' port can send. A real Prometheus never does, so a stand-in server sends it.
WRONG_SHAPES = {
    "odd value pairs": (
        {"resultType": "matrix", "result": [{"metric": {}, "values": [[1_700_000_000, "1", "2"]]}]},
        "value pair",
    ),
    "a value pair of one element": (
        {"resultType": "matrix", "result": [{"metric": {}, "values": [[1_700_000_000]]}]},
        "value pair",
    ),
    "string rows": ({"resultType": "matrix", "result": ["up", BIG]}, "series is not an object"),
    "a string metric": (
        {"resultType": "matrix", "result": [{"metric": BIG, "values": [POINT]}]},
        "labels are not an object",
    ),
    "label values that are not strings": (
        {"resultType": "matrix", "result": [{"metric": {"instance": 7}, "values": [POINT]}]},
        "labels are not an object",
    ),
    "values that are not a list": (
        {"resultType": "matrix", "result": [{"metric": {}, "values": BIG}]},
        "values are not a list",
    ),
    "a value that is not a number": (
        {"resultType": "matrix", "result": [{"metric": {}, "values": [[1_700_000_000, BIG]]}]},
        "value pair",
    ),
    "a result that is not a list": (
        {"resultType": "matrix", "result": {"up": BIG}}, "result is not a list"
    ),
    "a vector where a range query needs a matrix": (
        {"resultType": "vector", "result": [{"metric": {}, "value": POINT}]},
        "'vector' where a matrix was expected",
    ),
    "data that is a string": (BIG, "no data object"),
    "data missing": (MISSING, "no data object"),
}  # fmt: skip


@pytest.fixture
def viewer(fleet: Fleet) -> Client:

    client = Client()
    client.force_login(user_with_role("viewer", "viewer", password="viewer-password-1"))
    return client


def overview_answer(client: Client, fleet: Fleet) -> dict:
    response = client.get(f"/fleets/{fleet.slug}/overview.json?backend=prometheus&since=15m")
    assert response.status_code == 200, response.content[:300]
    return json.loads(response.content, parse_constant=lambda c: pytest.fail(f"bare {c}"))


@pytest.mark.parametrize("case", list(WRONG_SHAPES))
def test_a_prometheus_answer_of_the_wrong_shape_is_a_bad_answer_on_the_panel(
    fleet: Fleet, viewer: Client, case: str
) -> None:
    data, what = WRONG_SHAPES[case]
    respond = lambda h: range_answer(h, data)  # noqa: E731
    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        payload = overview_answer(viewer, fleet)
    panel = by_id(payload)["engine.kv"]
    assert panel["status"] == "error"
    assert panel["reasons"] == ["bad-answer"]
    assert panel["figure"] is None
    assert any(what in note for note in panel["notes"]), panel["notes"]
    # Said in a line, never by echoing what was sent.
    assert all(len(note) < 300 for p in payload["panels"] for note in p["notes"])


def test_one_malformed_answer_leaves_the_other_panels_drawn(fleet: Fleet, viewer: Client) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        if "time_to_first_token" in handler.path:
            range_answer(handler, {"resultType": "matrix", "result": ["not a series"]})
        else:
            matrix_of_ones(handler)

    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        payload = overview_answer(viewer, fleet)
    panels = by_id(payload)
    assert panels["latency.ttft"]["status"] == "error"
    assert panels["latency.ttft"]["reasons"] == ["bad-answer"]
    for drawn in ("traffic.requests", "engine.kv"):
        assert panels[drawn]["status"] == "ok"
    assert payload["source_state"]["status"] == "ok"


@pytest.mark.parametrize(
    "up",
    [
        {"resultType": "vector", "result": ["a:1"]},
        {"resultType": "vector", "result": [{"metric": "a:1", "value": POINT}]},
        {"resultType": "vector", "result": [{"metric": {"instance": "a:1"}, "value": "1"}]},
        {"resultType": "vector", "result": {"a:1": 1}},
        {"resultType": "vector", "result": [{"metric": {"instance": "a:1"}, "value": [1, "+Inf"]}]},
        {"resultType": "vector", "result": [{"metric": {"instance": "a:1"}, "value": [1, "many"]}]},
        {"resultType": "matrix", "result": []},
        MISSING,
    ],
)
def test_a_malformed_up_answer_leaves_the_panels_drawn_and_says_scrapes_are_unknown(
    fleet: Fleet, viewer: Client, up: object
) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/api/v1/query?"):
            body = {"status": "success"} if up is MISSING else {"status": "success", "data": up}
            json_answer(200, body)(handler)
        else:
            matrix_of_ones(handler)

    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        payload = overview_answer(viewer, fleet)
    panel = by_id(payload)["engine.kv"]
    assert panel["status"] == "partial"
    assert panel["figure"]["data"][0]["y"][0] == 1.0
    assert any("failed scrapes unknown" in note for note in panel["notes"]), panel["notes"]


def test_the_live_job_publishes_through_a_malformed_answer(fleet: Fleet) -> None:
    from dashboard import live
    from inventory.access import ViewScope

    bad = {"resultType": "matrix", "result": [{"metric": "up", "values": [POINT]}]}
    live.watch(ViewScope(fleet))
    respond = lambda h: range_answer(h, bad)  # noqa: E731
    with serving(respond) as server, override_settings(PROMETHEUS_URL=server.url("")):
        assert live.overviews_publish() == 1
    published = live.latest_overview(ViewScope(fleet))
    assert published is not None
    payload = json.loads(published)
    assert by_id(payload)["engine.kv"]["reasons"] == ["bad-answer"]
