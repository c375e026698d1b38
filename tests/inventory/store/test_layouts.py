"""Layouts through scrape cycles: an unchanged one is stored once, and one the database
lost is asked for again (its frame is not written without it)."""

from __future__ import annotations

from datetime import timedelta
from http.server import BaseHTTPRequestHandler

import pytest
from django.utils import timezone

from inventory.models import EndpointInventory, Fleet, SampleFrame, SeriesSet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from tests.inventory.badservers import send_body, serving

pytestmark = pytest.mark.django_db


def register(url: str) -> Fleet:
    return targets_import(fleet_slug="test-fleet", specs=[TargetSpec(url, "vllm", {})]).fleet


def steady(h: BaseHTTPRequestHandler) -> None:
    """A payload whose layout never changes (a live replica's may, legitimately)."""
    send_body(h, b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n")


def test_the_next_cycle_adds_frames_but_reuses_the_series_layout() -> None:
    with serving(steady) as server:
        fleet = register(server.url())
        fleet_scrape(fleet_id=fleet.pk)
        fleet_scrape(fleet_id=fleet.pk, now=timezone.now() + timedelta(seconds=30))
    assert SampleFrame.objects.count() == 2
    assert SeriesSet.objects.count() == 1


def test_a_layout_the_database_lost_is_asked_for_again() -> None:
    with serving(steady) as server:
        fleet = register(server.url())
        fleet_scrape(fleet_id=fleet.pk)
        SeriesSet.objects.all().delete()  # as after restoring an older backup
        report = fleet_scrape(fleet_id=fleet.pk)
        assert report.lost_layouts == (server.url(),)
        assert SampleFrame.objects.count() == 0
        fleet_scrape(fleet_id=fleet.pk)
    assert SeriesSet.objects.count() == 1
    assert SampleFrame.objects.count() == 1
    assert EndpointInventory.objects.count() == 1
