"""Which endpoints a query scope covers, and their inventories as stored."""

from __future__ import annotations

import pytest

from inventory.models import Endpoint, EndpointInventory
from inventory.selectors import scope_endpoints
from tests.queries.storefill import endpoint_with_scrapes, fleet_named

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}
RUNNING = [("vllm:num_requests_running", M, 3.0)]


def test_scope_endpoints_hold_the_families_as_stored() -> None:
    fleet = fleet_named()
    endpoint = endpoint_with_scrapes(
        fleet, "a:1", [(0, RUNNING), (10, RUNNING)], types={"vllm:num_requests_running": "gauge"}
    )
    [scoped] = scope_endpoints(fleet=fleet)
    stored = EndpointInventory.objects.get(endpoint=endpoint).families
    assert scoped.families == stored
    assert (scoped.endpoint_id, scoped.instance, scoped.kind) == (endpoint.pk, "a:1", "engine")


def test_scope_endpoints_keep_only_the_instances_asked_for_and_enabled_ones() -> None:
    fleet = fleet_named()
    types = {"vllm:num_requests_running": "gauge"}
    for instance in ("a:1", "b:1", "c:1"):
        endpoint_with_scrapes(fleet, instance, [(0, RUNNING)], types=types)
    Endpoint.objects.filter(fleet=fleet, url__contains="c:1").update(enabled=False)
    assert sorted(e.instance for e in scope_endpoints(fleet=fleet)) == ["a:1", "b:1"]
    assert [e.instance for e in scope_endpoints(fleet=fleet, instances=("b:1", "c:1"))] == ["b:1"]
