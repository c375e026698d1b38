"""The overview on the embedded store, filled by real scrapes of a fleetsim fleet."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard import live
from dashboard.overview import OverviewRequest, overview_compute, overview_json
from dashboard.panels import PANELS, PANELS_BY_ID
from devtools.waiting import wait_until
from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from inventory.access import ViewScope
from inventory.models import Fleet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from queries import Window

pytestmark = pytest.mark.django_db
# Panels fleetsim cannot feed: it simulates no speculative decoding.
# fleetsim runs no speculative decoding (a flag-gated vLLM feature).
NOT_SIMULATED = {"engine.spec_decode", "engine.spec_length"}
# Drawn from what fleetsim does expose: length, phase, step, source, NVLink and memory metrics.
NEW_PANELS = (
    "traffic.prompt_len", "traffic.output_len", "queue.reasons", "latency.ttft_heatmap",
    "latency.e2e_heatmap", "latency.phases", "engine.sources", "engine.iteration",
    "gpu.nvlink", "platform.memory",
)  # fmt: skip


@pytest.fixture(scope="module")
def sim() -> Iterator[SimFleet]:
    with start_fleet(replicas=2, scenario="steady", speed=20, seed=9) as running:
        yield running


def scraped_fleet(sim: SimFleet, kinds: set[str], cycles: int = 4) -> Fleet:
    specs = [TargetSpec(t.url, t.kind, {}) for t in sim.targets if t.kind in kinds]
    fleet = targets_import(fleet_slug="overview", specs=specs).fleet
    for _ in range(cycles):
        before = sim.sim_now()
        fleet_scrape(fleet_id=fleet.pk)

        # Let simulated time move on between scrapes, as a real interval would.
        def moved_on(b: float = before) -> bool | None:
            return True if sim.sim_now() > b + 10 else None

        wait_until(moved_on, what="sim time")
    return fleet


def window() -> Window:
    now = timezone.now()
    return Window(now - timedelta(minutes=10), now, 15.0)


def test_every_panel_is_drawn_from_real_scrapes(sim: SimFleet) -> None:
    fleet = scraped_fleet(sim, {"vllm", "dcgm"})
    payload = overview_compute(OverviewRequest(fleet, window(), "local"))
    by_id = {p["id"]: p for p in payload["panels"]}
    assert set(by_id) == {p.id for p in PANELS}
    for panel in payload["panels"]:
        if panel["id"] in NOT_SIMULATED:
            # fleetsim runs no speculative decoding: the planner's reason, not a flat zero.
            assert (panel["status"], panel["figure"]) == ("not-configured", None), panel["id"]
            assert any("flag-gated" in note for note in panel["notes"]), panel["notes"]
            continue
        assert panel["status"] == "ok", (panel["id"], panel["notes"])
        assert panel["figure"]["data"], panel["id"]
    for id in NEW_PANELS:
        figure = by_id[id]["figure"]
        if PANELS_BY_ID[id].kind == "heatmap":
            assert [t["type"] for t in figure["data"]] == ["heatmap"], id
            assert any(v for row in figure["data"][0]["z"] for v in row), id
        assert not any("decrease" in note for note in by_id[id]["notes"]), by_id[id]["notes"]
    # The JSON a browser gets is strict: no bare NaN or Infinity anywhere.
    json.loads(overview_json(payload), parse_constant=lambda c: pytest.fail(f"bare {c}"))


def test_gpu_panels_say_why_without_a_dcgm_exporter(sim: SimFleet) -> None:
    fleet = scraped_fleet(sim, {"vllm"}, cycles=2)
    payload = overview_compute(OverviewRequest(fleet, window(), "local"))
    gpu = [p for p in payload["panels"] if p["id"].startswith("gpu.")]
    assert {p["status"] for p in gpu} == {"unavailable"}
    assert all(p["figure"] is None for p in gpu)
    assert any("dcgm" in note for p in gpu for note in p["notes"])


def test_overview_json_requires_login(client: Client, sim: SimFleet) -> None:
    Fleet.objects.create(slug="private", name="private")
    response = client.get(reverse("dashboard-fleet-overview-json", args=["private"]))
    # JSON for the polling script (not the login page's HTML), and nothing about the fleet.
    assert response.status_code == 401
    assert response.json()["error"] == "signed out"


def test_overview_json_rejects_bad_parameters_with_a_message(owner_client: Client) -> None:
    Fleet.objects.create(slug="f", name="f")
    url = reverse("dashboard-fleet-overview-json", args=["f"])
    response = owner_client.get(url, {"since": "forever"})
    assert response.status_code == 400
    assert response.json()["error"].startswith("since must be one of")
    assert owner_client.get(url, {"backend": "mysql"}).status_code == 400


def test_one_computation_per_interval_serves_every_viewer(
    sim: SimFleet, monkeypatch: pytest.MonkeyPatch, owner_client: Client
) -> None:
    fleet = scraped_fleet(sim, {"vllm"}, cycles=2)
    calls: list[str] = []
    real = live.overview_compute

    def counting(request: OverviewRequest) -> dict[str, object]:
        calls.append(request.fleet.slug)
        return real(request)

    monkeypatch.setattr(live, "overview_compute", counting)
    live.watch(ViewScope(fleet))
    assert live.overviews_publish() == 1
    url = reverse("dashboard-fleet-overview-json", args=[fleet.slug])
    bodies = {owner_client.get(url).content for _ in range(20)}
    assert calls == [fleet.slug]
    assert len(bodies) == 1


def test_unwatched_fleets_are_not_computed(sim: SimFleet) -> None:
    Fleet.objects.create(slug="quiet", name="quiet")
    assert live.overviews_publish() == 0


def test_panel_command_prints_the_numbers_behind_a_panel(sim: SimFleet) -> None:
    from io import StringIO

    from django.core.management import call_command

    fleet = scraped_fleet(sim, {"vllm"}, cycles=3)
    out = StringIO()
    call_command("panel", fleet.slug, "latency.ttft", "--since", "15m", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["status"] == "ok"
    assert data["resolved"]["p99"] == "vllm:time_to_first_token_seconds"
    assert any(v is not None for trace in data["traces"] for v in trace["values"])


def test_panel_command_names_an_unknown_panel(sim: SimFleet) -> None:
    from io import StringIO

    from django.core.management import call_command

    Fleet.objects.create(slug="x", name="x")
    err = StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("panel", "x", "latency.nope", stderr=err)
    assert exit_info.value.code == 2
    assert err.getvalue().startswith("no panel 'latency.nope'; choose from")


def strict_loads(text: str) -> object:
    # What the browser's JSON.parse accepts: a bare NaN or Infinity token fails the test.
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in the JSON"))


def test_overview_json_writes_nan_and_infinities_as_null_in_strict_json() -> None:
    y = [1.5, math.nan, math.inf, -math.inf, np.float64("nan"), np.float64(2.5), np.int64(3)]
    payload = {"panels": [{"figure": {"data": [{"y": y}]}, "notes": ["≤1 <b>"]}]}
    text = overview_json(payload)
    assert isinstance(text, str)  # the websocket sends it as a text frame
    assert strict_loads(text) == {
        "panels": [
            {
                "figure": {"data": [{"y": [1.5, None, None, None, None, 2.5, 3]}]},
                "notes": ["≤1 <b>"],
            }
        ]
    }


def test_overview_json_refuses_a_key_json_cannot_hold_rather_than_guess() -> None:
    with pytest.raises(TypeError):
        overview_json({"panels": {1: "a number is not a JSON key"}})


def test_the_json_writes_a_time_axis_the_traces_share_once_and_leaves_the_payload_alone() -> None:
    axis = ["2026-12-01 10:00:00.000", "2026-12-01 10:00:15.000"]
    shared: dict[str, Any] = {
        "data": [
            {"name": "a", "x": list(axis), "y": [1, 2]},
            {"name": "b", "x": list(axis), "y": [3, None]},
        ]
    }
    apart: dict[str, Any] = {
        "data": [
            {"name": "a", "x": list(axis), "y": [1, 2]},
            {"name": "b", "x": axis[:1], "y": [3]},
        ]
    }
    payload: dict[str, Any] = {
        "panels": [
            {"id": "s", "figure": shared},
            {"id": "p", "figure": apart},
            {"id": "n", "figure": None},
        ]
    }
    sent = json.loads(overview_json(payload))
    one, two, three = sent["panels"]
    assert one["figure"]["x"] == axis and all("x" not in t for t in one["figure"]["data"])
    assert [t["y"] for t in one["figure"]["data"]] == [[1, 2], [3, None]]
    assert "x" not in two["figure"] and [t["x"] for t in two["figure"]["data"]] == [axis, axis[:1]]
    assert three["figure"] is None
    assert shared["data"][0]["x"] == axis and "x" not in shared  # the cached payload is intact
