"""An overview against a Prometheus slower than the page's deadline: the JSON and the live
push both come back by the deadline, every panel Prometheus did not answer for says so, and
the banner says Prometheus is unavailable since when.

A real Prometheus cannot be made slow on demand, so a stand-in HTTP server holds every
query until the test ends. The per-query timeout is set far above the deadline, so only
the deadline can be what cut the page short; elapsed times are held to the deadline with a
generous margin, as a bound the code promises, not as a performance figure.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from django.test import Client, override_settings

from dashboard import live
from inventory.access import ViewScope
from inventory.models import Fleet
from tests.dashboard.replicafill import replica
from tests.inventory.badservers import BadServer, serving
from tests.queries.storefill import fleet_named
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db

DEADLINE = 1.0
MARGIN = 5.0
LATE = "Prometheus did not answer within the page's 1 s deadline"
# Panels this fleet's replica exposes the metrics of: each needs Prometheus' answer.
READ_FROM_PROMETHEUS = ("traffic.requests", "engine.kv", "latency.ttft", "queue.depth")


@pytest.fixture
def fleet(db: None) -> Fleet:
    fleet = fleet_named()
    replica(fleet, "a:1")
    return fleet


@pytest.fixture
def stuck_prometheus() -> Iterator[BadServer]:
    release = threading.Event()

    def hold(handler: BaseHTTPRequestHandler) -> None:
        release.wait(60)

    with serving(hold) as server:
        settings = override_settings(
            PROMETHEUS_URL=server.url(""),
            PROMETHEUS_BATCH_DEADLINE_SECONDS=DEADLINE,
            PROMETHEUS_TIMEOUT_SECONDS=30.0,
        )
        try:
            with settings:
                yield server
        finally:
            release.set()


def panels_of(payload: dict) -> dict[str, dict]:
    return {panel["id"]: panel for panel in payload["panels"]}


def assert_late_everywhere(payload: dict) -> None:
    panels = panels_of(payload)
    for panel_id in READ_FROM_PROMETHEUS:
        panel = panels[panel_id]
        assert panel["status"] == "error", panel
        assert "deadline" in panel["reasons"]  # beside `not-exposed` traces, say
        assert LATE in panel["notes"]
        assert panel["figure"] is None
    # Every failed panel failed for that reason, not for another one hiding behind it.
    assert all("deadline" in p["reasons"] for p in panels.values() if p["status"] == "error")
    assert payload["source_state"]["status"] == "down"
    assert payload["source_state"]["message"] == LATE


def test_overview_json_answers_by_the_deadline_with_each_late_panel_saying_so(
    fleet: Fleet, stuck_prometheus: BadServer
) -> None:
    client = Client()
    client.force_login(user_with_role("viewer", "viewer", password="viewer-password-1"))
    started = time.monotonic()
    response = client.get(f"/fleets/{fleet.slug}/overview.json?backend=prometheus&since=15m")
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert response.status_code == 200
    assert_late_everywhere(json.loads(response.content))
    assert stuck_prometheus.requests  # it was asked, and did not answer


def test_a_live_computation_pushes_by_the_deadline_with_each_late_panel_saying_so(
    fleet: Fleet, stuck_prometheus: BadServer
) -> None:
    live.watch(ViewScope(fleet))
    started = time.monotonic()
    assert live.overviews_publish() == 1
    assert time.monotonic() - started < DEADLINE + MARGIN
    pushed = live.latest_overview(ViewScope(fleet))
    assert pushed is not None
    assert_late_everywhere(json.loads(pushed))
