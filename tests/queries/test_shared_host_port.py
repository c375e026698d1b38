"""Endpoints that share a host and port are never read as one series (issue 18, failure 1).

Two real endpoints on one port, scraped by live cycles: `/metrics` counts 10 requests a
second and `/gateway/metrics` 1. Merged into one `host:port` series, each scrape of the
slow one reads as a counter reset of the fast one and the fleet rate comes out many
times too high with no finding; read as two series, each keeps its own rate.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler

import pytest

from inventory.models import Endpoint
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from queries import Rate, Scope, Window, run_query
from tests.inventory.badservers import send_body, serving

pytestmark = pytest.mark.django_db

RATES = {"/metrics": 10.0, "/gateway/metrics": 1.0}
CYCLES = 8
STEP = 1.0


def test_two_endpoints_on_one_host_port_are_two_series_with_their_own_rates() -> None:
    started = time.time()

    def respond(h: BaseHTTPRequestHandler) -> None:
        count = RATES[h.path] * (time.time() - started)
        send_body(
            h,
            b"# TYPE vllm:request_success counter\n"
            b'vllm:request_success_total{finished_reason="stop",model_name="m"} %.3f\n' % count,
        )

    with serving(respond) as server:
        specs = [TargetSpec(server.url(path), "vllm", {}) for path in RATES]
        fleet = targets_import(fleet_slug="shared-port", specs=specs).fleet
        for _ in range(CYCLES):
            report = fleet_scrape(fleet_id=fleet.pk)
            assert report.succeeded == 2
            # Live cycles a second apart: the store stamps each frame with its scrape's own
            # clock, so time has to pass between cycles. A pause by design, not a wait for
            # a condition.
            time.sleep(STEP)
    hostport = f"127.0.0.1:{server.port}"
    end = datetime.fromtimestamp(time.time(), UTC)
    window = Window(end, end, STEP)
    by_instance = run_query(
        Rate("request_success", by=("instance",), window_seconds=CYCLES * STEP),
        scope=Scope(fleet),
        window=window,
        backend="local",
    )
    fleetwide = run_query(
        Rate("request_success", window_seconds=CYCLES * STEP),
        scope=Scope(fleet),
        window=window,
        backend="local",
    )
    (total,) = fleetwide.series
    assert total.values[-1] == pytest.approx(11.0, rel=0.2)
    assert by_instance.status == "ok", by_instance.message
    rates = {s.labels["instance"]: s.values[-1] for s in by_instance.series}
    assert set(rates) == {hostport, f"{hostport}/gateway/metrics"}
    assert rates[hostport] == pytest.approx(10.0, rel=0.2)
    assert rates[f"{hostport}/gateway/metrics"] == pytest.approx(1.0, rel=0.2)
    # The `instance` of each endpoint: host:port for the first, host:port/path for the
    # second, which shares them.
    assert {e.url: e.instance for e in Endpoint.objects.all()} == {
        server.url("/metrics"): hostport,
        server.url("/gateway/metrics"): f"{hostport}/gateway/metrics",
    }
