"""overview.json with Redis down and the database fine: the data still comes, with a note
that live updates are off; a Redis that accepts and never answers cannot hang it; and the
outage loses no scrape and leaves nothing half-written behind.

The Redis is never the machine's shared one: a loopback port nothing listens on (stopped),
or a socket server that accepts and stays silent (tests/redisfakes.py).
"""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from dashboard import live
from fleetscope.lib.channel_layers import redis_channel_layers
from fleetscope.lib.redis_settings import redis_caches
from fleetsim.api import start_fleet
from inventory.access import ViewScope
from inventory.models import Fleet, ScrapeRun
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from tests.dashboard.replicafill import END, replica
from tests.queries.storefill import T0, fleet_named
from tests.redisfakes import MARGIN, TIMEOUTS, silent_redis
from tests.roles import user_with_role

pytestmark = pytest.mark.django_db


def redis_at(url: str) -> override_settings:
    """Production's Redis clients (cache and channel layer), pointed at `url`."""
    return override_settings(
        CACHES=redis_caches(url, TIMEOUTS),
        CHANNEL_LAYERS=redis_channel_layers(url, timeouts=TIMEOUTS),
        REDIS_TIMEOUT_SECONDS=TIMEOUTS.read_seconds,
    )


@pytest.fixture
def fleet(db: None) -> Fleet:
    """A replica with five minutes of data ending now, in the default view's window."""
    fleet = fleet_named("redis-down")
    replica(fleet, "a:1", start=(timezone.now() - T0).total_seconds() - (END + 20))
    return fleet


@pytest.fixture
def viewer() -> Client:
    client = Client()
    client.force_login(user_with_role("viewer", "viewer", password="viewer-password-1"))
    return client


def overview(client: Client, fleet: Fleet) -> dict:
    response = client.get(f"/fleets/{fleet.slug}/overview.json")
    assert response.status_code == 200, response.content[:300]
    return json.loads(response.content)


def drawn(payload: dict) -> set[str]:
    return {p["id"] for p in payload["panels"] if p["status"] in ("ok", "partial")}


def test_with_redis_stopped_overview_json_answers_with_the_data_and_says_live_is_off(
    fleet: Fleet, viewer: Client, closed_port: int
) -> None:
    with redis_at(f"redis://127.0.0.1:{closed_port}/0"):
        payload = overview(viewer, fleet)
    assert {"traffic.requests", "engine.kv", "queue.depth"} <= drawn(payload)
    assert payload["live_updates"] == {
        "status": "off",
        "message": "the shared cache (Redis) is unreachable (ConnectionError)",
    }
    # No "since" could be remembered, and none is invented: the source itself is fine.
    assert payload["source_state"]["status"] == "ok"


def test_a_redis_that_accepts_and_never_answers_cannot_hang_overview_json(
    fleet: Fleet, viewer: Client
) -> None:
    with silent_redis() as redis, redis_at(redis.url):
        started = time.monotonic()
        payload = overview(viewer, fleet)
        # One read timeout, then the cache is left alone for the rest of the request.
        assert time.monotonic() - started < TIMEOUTS.read_seconds + MARGIN
        assert len(redis.accepted) == 1
    assert {"traffic.requests", "engine.kv", "queue.depth"} <= drawn(payload)
    assert payload["live_updates"]["message"] == "the shared cache (Redis) did not answer in time"


def test_with_redis_working_the_overview_carries_no_such_note(fleet: Fleet, viewer: Client) -> None:
    assert "live_updates" not in overview(viewer, fleet)


@pytest.mark.django_db(transaction=True)
def test_with_redis_stopped_scrapes_are_recorded_and_the_live_job_writes_nothing(
    closed_port: int,
) -> None:
    with start_fleet(replicas=1, scenario="steady", speed=20, seed=5) as sim:
        specs = [TargetSpec(t.url, t.kind, {}) for t in sim.targets if t.kind == "vllm"]
        fleet = targets_import(fleet_slug="outage", specs=specs).fleet
        scope = ViewScope(fleet)
        with redis_at(f"redis://127.0.0.1:{closed_port}/0"):
            fleet_scrape(fleet_id=fleet.pk)
            assert not live.watch(scope)  # said, not raised: the consumer refuses on it
            assert live.overviews_publish() == 0
    runs = ScrapeRun.objects.filter(endpoint__fleet=fleet)
    assert [run.status for run in runs] == ["succeeded"] * len(specs)
    assert runs[0].samples > 0
    # Redis back (the test's in-memory cache): nothing of the outage is left half-done.
    assert live.latest_overview(scope) is None
    assert live.overviews_publish() == 0  # no watch mark was ever stored
