"""Scrape cycles end to end: fleetsim (or a misbehaving endpoint) -> scraper -> database."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

import httpx
import pytest
from django.test import override_settings
from django.utils import timezone

from fleetsim.api import Fleet as SimFleet
from fleetsim.api import start_fleet
from inventory import scraping
from inventory.models import (
    Endpoint,
    EndpointInventory,
    Fleet,
    ScrapeRun,
    ScrapeStatus,
)
from inventory.registration import targets_import
from inventory.selectors import endpoint_snapshots
from inventory.services import fleet_claim, fleet_scrape, store_prune
from inventory.store import frames_in_window
from inventory.targets import TargetSpec
from tests.inventory.badservers import send_body, serving

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def sim() -> Iterator[SimFleet]:
    with start_fleet(replicas=2, scenario="steady", seed=7) as running:
        yield running


def register(urls_and_kinds: list[tuple[str, str]]) -> Fleet:
    specs = [TargetSpec(url, kind, {}) for url, kind in urls_and_kinds]
    return targets_import(fleet_slug="test-fleet", specs=specs).fleet


def frames_stored() -> int:
    """How many frames the store holds, as its face reads them (what a cycle leaves in the
    store's own tables is for tests/inventory/store/)."""
    ids = list(Endpoint.objects.values_list("pk", flat=True))
    start, end = datetime(2000, 1, 1, tzinfo=UTC), timezone.now() + timedelta(days=365)
    return len(list(frames_in_window(endpoint_ids=ids, start=start, end=end)))


def test_a_cycle_records_a_run_a_frame_and_an_inventory_per_endpoint(sim: SimFleet) -> None:
    fleet = register([(t.url, t.kind) for t in sim.targets])
    report = fleet_scrape(fleet_id=fleet.pk)
    assert (report.claimed, report.failed) == (True, 0)
    assert report.succeeded == len(sim.targets)
    assert ScrapeRun.objects.filter(status=ScrapeStatus.SUCCEEDED).count() == len(sim.targets)
    assert frames_stored() == len(sim.targets)
    engine = EndpointInventory.objects.filter(endpoint__kind="vllm").first()
    assert engine is not None
    assert engine.dialect == "current"
    assert engine.detected_kind == "engine"
    assert engine.families["vllm:time_to_first_token_seconds"]["type"] == "histogram"
    assert engine.families["vllm:time_to_first_token_seconds"]["buckets"][:2] == [0.001, 0.005]
    kinds = set(EndpointInventory.objects.values_list("endpoint__kind", "detected_kind"))
    assert ("dcgm", "dcgm") in kinds


def steady(h: BaseHTTPRequestHandler) -> None:
    """A payload whose layout never changes (a live replica's may, legitimately)."""
    send_body(h, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")


def test_a_claimed_fleet_is_not_scraped_again_until_the_lease_ends(sim: SimFleet) -> None:
    fleet = register([(sim.targets[0].url, "vllm")])
    assert fleet_claim(fleet_id=fleet.pk, now=timezone.now(), lease_seconds=60)
    report = fleet_scrape(fleet_id=fleet.pk)
    assert report.claimed is False
    assert ScrapeRun.objects.count() == 0


def test_a_bad_scrape_writes_only_its_failed_run_and_keeps_the_last_good_data() -> None:
    good = b"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total 7\n"
    bad = b"".join(b"ok_%d 1\n" % i for i in range(500)) + b"this is not a sample\n"
    bodies = [good, bad]

    def respond(h: BaseHTTPRequestHandler) -> None:
        send_body(h, bodies[0] if len(bodies) == 2 else bodies[-1])
        if len(bodies) == 2:
            bodies.pop(0)

    with serving(respond) as server:
        fleet = register([(server.url(), "vllm")])
        fleet_scrape(fleet_id=fleet.pk)
        fleet_scrape(fleet_id=fleet.pk)
    failed = ScrapeRun.objects.get(status=ScrapeStatus.FAILED)
    assert failed.error_kind == "parse_error"
    assert failed.error.startswith("parse error at line 501:")
    assert frames_stored() == 1
    (snapshot,) = endpoint_snapshots(fleet=fleet)
    assert snapshot.last_run_ok is False
    assert snapshot.last_error.startswith("parse error at line 501")
    assert snapshot.families is not None
    assert "vllm:num_preemptions" in snapshot.families


def test_a_refused_endpoint_is_down_with_the_reason(closed_port: int) -> None:
    fleet = register([(f"http://127.0.0.1:{closed_port}/metrics", "vllm")])
    report = fleet_scrape(fleet_id=fleet.pk)
    assert report.failed == 1
    run = ScrapeRun.objects.get()
    assert (run.status, run.error_kind, run.error) == ("failed", "refused", "connection refused")
    assert frames_stored() == 0
    assert EndpointInventory.objects.count() == 0


def test_counter_resets_are_stored_as_they_happened() -> None:
    values = [b"1000", b"5"]

    def respond(h: BaseHTTPRequestHandler) -> None:
        value = values.pop(0) if len(values) > 1 else values[0]
        send_body(
            h, b"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total %s\n" % value
        )

    with serving(respond) as server:
        fleet = register([(server.url(), "vllm")])
        start = timezone.now()
        fleet_scrape(fleet_id=fleet.pk)
        fleet_scrape(fleet_id=fleet.pk)
    endpoint = Endpoint.objects.get()
    frames = list(frames_in_window(endpoint_ids=[endpoint.pk], start=start, end=timezone.now()))
    assert [f.value_of("vllm:num_preemptions_total", {}) for f in frames] == [1000.0, 5.0]


def test_prune_removes_frames_and_runs_past_retention(sim: SimFleet) -> None:
    fleet = register([(sim.targets[0].url, "vllm")])
    fleet_scrape(fleet_id=fleet.pk)
    assert store_prune(now=timezone.now() + timedelta(hours=23)) == 0
    assert store_prune(now=timezone.now() + timedelta(hours=25)) == 1
    assert ScrapeRun.objects.count() == 0


def test_a_cycle_only_ever_sends_get_to_the_registered_metrics_urls(sim: SimFleet) -> None:
    """Read-only by construction: every request FleetScope makes is recorded and checked."""
    seen: list[tuple[str, str]] = []
    scraping.REQUEST_OBSERVERS.append(lambda method, url: seen.append((method, urlsplit(url).path)))
    try:
        fleet = register([(t.url, t.kind) for t in sim.targets])
        fleet_scrape(fleet_id=fleet.pk)
    finally:
        scraping.REQUEST_OBSERVERS.clear()
    assert len(seen) == len(sim.targets)
    assert {method for method, _ in seen} == {"GET"}
    assert {path for _, path in seen} == {"/metrics"}


def test_the_outbound_client_refuses_anything_but_get() -> None:
    with scraping.sync_client(timeout_seconds=1) as client:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            with pytest.raises(scraping.WriteAttempted, match=f"refused {method}"):
                client.request(method, "http://127.0.0.1:9/reset_prefix_cache")
    with pytest.raises(httpx.ConnectError), scraping.sync_client(timeout_seconds=1) as client:
        client.get("http://127.0.0.1:9/metrics")


def test_the_scrape_session_refuses_anything_but_get() -> None:
    async def send(method: str) -> None:
        session = scraping.scrape_session(timeout_seconds=1, max_connections=1)
        async with session, session.request(method, "http://127.0.0.1:9/sleep"):
            pass

    for method in ("POST", "PUT", "DELETE"):
        with pytest.raises(scraping.WriteAttempted, match=f"refused {method}"):
            asyncio.run(send(method))


@pytest.mark.parametrize(
    ("dialect", "dp", "engines"),
    [("current", 2, ["0", "1"]), ("v1-0.10", 1, ["0"]), ("v1-0.8", 1, []), ("v0", 1, [])],
)
def test_a_cycle_inventories_every_vllm_dialect(dialect: str, dp: int, engines: list[str]) -> None:
    with start_fleet(replicas=1, dialect=dialect, dp=dp, seed=2) as fleet:
        engine = next(t.url for t in fleet.targets if t.kind == "vllm")
        db_fleet = register([(engine, "vllm")])
        report = fleet_scrape(fleet_id=db_fleet.pk)
    assert report.succeeded == 1
    inventory = EndpointInventory.objects.get()
    assert inventory.dialect == dialect
    assert inventory.detected_kind == "engine"
    assert inventory.engines == engines


def test_a_resolution_limit_stores_at_most_one_frame_per_interval() -> None:
    with override_settings(FLEETSCOPE_STORE_RESOLUTION_SECONDS=60), serving(steady) as server:
        fleet = register([(server.url(), "vllm")])
        fleet_scrape(fleet_id=fleet.pk)
        fleet_scrape(fleet_id=fleet.pk)
    assert ScrapeRun.objects.count() == 2
    assert frames_stored() == 1
