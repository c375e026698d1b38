"""Drill: Prometheus stops mid-session and starts again on the same port and data directory.

The overview (backend=prometheus) says Prometheus is unavailable and since when, each
panel says why and when it last had data, nothing is drawn as zero; when Prometheus is
back the next request shows data again, history included, in the same FleetScope
process with the same settings (no restart, no cache to clear).
tests/dashboard/test_overview_prometheus.py covers the outage alone and the other
failures (a stand-in server answers those); this is the stop-and-recover round trip.
"""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import time_machine
from django.test import Client, override_settings

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import start_fleet
from inventory.models import Fleet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from tests.roles import user_with_role

pytestmark = [pytest.mark.drill, pytest.mark.prometheus]

# Panels the fleet's vLLM replica feeds; each must go down and come back.
DRAWN = ("queue.depth", "traffic.tokens", "latency.ttft")


def overview(client: Client, fleet: Fleet) -> dict:
    response = client.get(f"/fleets/{fleet.slug}/overview.json?backend=prometheus&since=15m")
    assert response.status_code == 200, response.content[:300]
    return json.loads(response.content, parse_constant=lambda c: pytest.fail(f"bare {c}"))


def by_id(payload: dict) -> dict[str, dict]:
    return {panel["id"]: panel for panel in payload["panels"]}


def samples_up_to_now(url: str) -> float | None:
    """How many scrapes of `up` Prometheus holds for the last minute (None: none yet)."""
    answer = httpx.get(f"{url}/api/v1/query", params={"query": "count_over_time(up[1m])"})
    result = answer.json()["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def last_scrape_at(url: str) -> float:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": "timestamp(up)"})
    result = answer.json()["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def samples_up_to(url: str, moment: float) -> float:
    """How many scrapes of `up` Prometheus holds for the two minutes before `moment`."""
    query = f"count_over_time(up[2m] @ {moment:.3f})"
    result = httpx.get(f"{url}/api/v1/query", params={"query": query}).json()["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def points(panel: dict) -> list[tuple[str, float]]:
    """Every drawn (x, y) of the panel's figure, gaps left out; a trace without its own x
    takes the figure's shared time axis, as the page does (dashboard.overview)."""
    figure = panel["figure"]
    return [
        (x, y)
        for trace in figure["data"]
        for x, y in zip(trace.get("x") or figure.get("x") or [], trace.get("y") or [], strict=False)
        if y is not None
    ]


# The overview JSON is computed once per step (15 s for the last 15 minutes) and shared by
# every viewer polling in that step (dashboard/views/overview.py), so a change of state
# reaches the page at the first poll of the next step. Rather than wait out each step,
# the drill moves FleetScope's clock (time-machine; Prometheus keeps the real one) to the
# start of the next step: the answer is computed afresh, as at that first poll.
STEP_SECONDS = 15.0


def next_step(clock: time_machine.Traveller) -> None:
    clock.shift(STEP_SECONDS - time.time() % STEP_SECONDS + 0.05)


@pytest.mark.django_db(transaction=True)
def test_prometheus_stopped_then_restarted_degrades_the_overview_and_recovers_without_restart(
    tmp_path: Path,
) -> None:
    viewer = Client()
    viewer.force_login(user_with_role("viewer", "viewer", password="viewer-password-1"))
    data_dir = tmp_path / "data"
    with start_fleet(replicas=1, scenario="steady", speed=10, seed=3) as sim, ExitStack() as fs:
        target = next(t for t in sim.targets if t.kind == "vllm")
        fleet = targets_import(fleet_slug="p", specs=[TargetSpec(target.url, "vllm", {})]).fleet
        fleet_scrape(fleet_id=fleet.pk)  # the inventory: which names this fleet exposes
        config = file_sd_config(tmp_path, [{"targets": [urlsplit(target.url).netloc]}])
        with running_prometheus(config, data_dir) as url:
            wait_until(
                lambda: (samples_up_to_now(url) or 0) >= 3 or None,
                timeout=30,
                what="three Prometheus scrapes",
            )
            port = urlsplit(url).port
            # One FleetScope (this process) with one set of settings from here to the end.
            fs.enter_context(override_settings(PROMETHEUS_URL=url, PROMETHEUS_TIMEOUT_SECONDS=5))
            clock = fs.enter_context(time_machine.travel(time.time(), tick=True))
            before = overview(viewer, fleet)
        stopped_at = time.time()  # the real time still: the clock has not been moved yet
        next_step(clock)
        during = overview(viewer, fleet)
        during_at = time.time()  # FleetScope's clock, a step on
        readiness = viewer.get("/readyz")
        next_step(clock)
        later = overview(viewer, fleet)
        # Started again on the same port with the same data directory.
        with running_prometheus(config, data_dir, port=port) as same_url:
            assert same_url == url
            next_step(clock)
            after = overview(viewer, fleet)
            wait_until(
                lambda: last_scrape_at(url) > stopped_at or None,
                timeout=30,
                what="Prometheus to scrape again after its restart",
            )
            kept_before_the_stop = samples_up_to(url, stopped_at)

    good, failed, recovered = by_id(before), by_id(during), by_id(after)
    for panel_id in DRAWN:
        assert good[panel_id]["status"] == "ok", good[panel_id]

    # What the user sees while it is down: the source, since when, and each panel's reason.
    state = during["source_state"]
    assert state["message"] == "prometheus unreachable: ConnectError"
    since = datetime.strptime(state["since"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert stopped_at - 1 <= since.timestamp() <= during_at
    assert later["source_state"]["since"] == state["since"]  # the outage's start, kept
    for panel_id in DRAWN:
        panel = failed[panel_id]
        assert panel["status"] == "error", panel
        assert panel["reasons"] == ["prometheus-unavailable"]
        assert panel["notes"][0] == "prometheus unreachable: ConnectError"
        assert panel["figure"] is None  # a gap, never a line at zero
        assert panel["last_good_at"] == good[panel_id]["last_good_at"] is not None
    # Readiness: Prometheus is reported down, but is not required (the store still serves).
    assert readiness.status_code == 200
    check = readiness.json()["checks"]["prometheus"]
    assert (check["status"], check["required"]) == ("down", False)
    assert "unreachable" in check["error"]

    # Back on the same port and data directory: the next step's answer has data again, the
    # history from before the outage included, and the outage is over.
    assert after["source_state"] == {"status": "ok", "since": None, "message": ""}
    for panel_id in DRAWN:
        panel = recovered[panel_id]
        assert panel["status"] == "ok", panel
        assert panel["last_good_at"] > good[panel_id]["last_good_at"]
    assert points(recovered["queue.depth"]), "drawn as ok, but with nothing to draw"
    # The samples scraped before the outage are still in the restarted Prometheus.
    assert kept_before_the_stop >= 3
