"""`make demo` fills the store with the simulated fleet's last hours before it serves."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import override_settings

from capacity.models import FleetPrice
from dashboard.timerange import parse_range
from fleetscope.demo_audit import DEMO_DASHBOARD_NAME, DEMO_RULES_NAME
from fleetscope.demo_fleet import (
    DEMO_FLEET_SLUG,
    DEMO_INCIDENT_BEFORE_END_SECONDS,
    HISTORY_STEP_SECONDS,
    demo_fleet_start,
)
from inventory.models import Fleet
from inventory.store import store_span
from queries import Rate, Scope, Window, run_query

pytestmark = pytest.mark.django_db

HOURS = 1.1  # a little more than the default one-hour view


def test_the_demo_start_fills_the_default_view_with_the_fleets_history(tmp_path: Path) -> None:
    said: list[str] = []
    with override_settings(FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=True, VAR_DIR=tmp_path):
        demo = demo_fleet_start(history_hours=HOURS, replicas=2, say=said.append)
    try:
        now = datetime.now(UTC)
        fleet = Fleet.objects.get(slug=DEMO_FLEET_SLUG)
        held = store_span(list(fleet.endpoints.values_list("id", flat=True)))
        assert held is not None
        first, last = held
        step = timedelta(seconds=HISTORY_STEP_SECONDS)
        assert abs(first - (now - timedelta(hours=HOURS))) < 2 * step
        assert now - last < 2 * step
        # Every endpoint the live fleet serves holds the history: the same series go on.
        served = {t.url for t in demo.sim.targets}
        assert set(fleet.endpoints.values_list("url", flat=True)) == served
        assert not list(tmp_path.glob("*.om"))  # the history file goes once imported

        view = parse_range(None, None, now=now)  # the overview's default window
        window = Window(view.start, view.end, view.step_seconds)
        result = run_query(Rate("request_success"), scope=Scope(fleet), window=window,
                           backend="local")  # fmt: skip
        assert result.status == "ok", result
        (series,) = result.series
        points = math.ceil((view.end - view.start).total_seconds() / view.step_seconds)
        drawn = sum(1 for v in series.values if v is not None and not math.isnan(v))
        assert drawn >= 0.9 * points, (drawn, points)

        # The incident is at a known time inside that view, and start-up said so.
        incident = demo.sim.manifest["window"]
        assert view.start.timestamp() < incident["start"] < incident["end"] < time.time()
        assert abs(time.time() - incident["start"] - DEMO_INCIDENT_BEFORE_END_SECONDS) < 120
        assert "kv-pressure" in demo.summary and "min ago" in demo.summary
        assert said[0].startswith("demo: simulating the fleet's last 1.1 h")
        assert any("of history takes about" in line for line in said)
        # The live fleet carries on from the history: its clock is now, not 0.
        assert abs(demo.sim.model.unix(demo.sim.model.now) - time.time()) < 10
        # What a reviewer would enter is there, and no price anybody made up.
        served = {cfg.model.served_name for cfg in demo.sim.model.configs}
        assert set(fleet.capacity_plans.values_list("model_name", flat=True)) == served
        assert fleet.slos.filter(slug="chat").exists()
        assert fleet.tenant_rules.filter(kind="gateway_label", pattern="acme").exists()
        assert not FleetPrice.objects.filter(fleet=fleet).exists()
        # Its blind-spot audit ran on FleetScope's own rules and the example dashboard:
        # the current-name panels and the rules are live, the renamed and removed are not.
        sources = set(fleet.blindspot_sources.values_list("name", flat=True))
        assert sources == {DEMO_DASHBOARD_NAME, DEMO_RULES_NAME}
        run = fleet.blindspot_runs.first()
        assert run is not None
        items = run.report["items"]
        verdicts = {i["name"]: i["verdict"] for i in items if i["kind"] == "panel"}
        assert verdicts["KV cache usage"] == "live"
        assert verdicts["TTFT p99"] == "live"
        assert verdicts["KV cache usage (before the 0.9.2 rename)"] == "blind"
        assert verdicts["Swapped requests (V0 only)"] == "blind"
        assert all(i["verdict"] == "live" for i in items if i["kind"] != "panel"), items
    finally:
        demo.sim.stop()
