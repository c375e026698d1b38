"""Planning reads each endpoint's inventory as it is now: decoded inventories are reused
by their text, so an inventory that changed is planned on its new families at once."""

from __future__ import annotations

import pytest

from inventory.models import EndpointInventory
from queries import Scope, Window
from queries.plan import Plan, plan_query
from queries.spec import Gauge
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}
WINDOW = Window(at(0), at(20), 10)


def test_an_inventory_changed_since_the_last_plan_is_planned_on_its_new_families() -> None:
    fleet = fleet_named()
    scrapes = [(s, [("vllm:gpu_cache_usage_perc", M, 0.5)]) for s in (0, 10, 20)]
    endpoint = endpoint_with_scrapes(fleet, "a:1", scrapes, types={})
    before = plan_query(Gauge("kv_usage"), scope=Scope(fleet), window=WINDOW)
    assert isinstance(before, Plan)
    assert before.keys["kv_usage"].name == "vllm:gpu_cache_usage_perc"
    # The engine was upgraded: the same endpoint now exposes the newer name only.
    inventory = EndpointInventory.objects.get(endpoint=endpoint)
    families = inventory.families
    inventory.families = {"vllm:kv_cache_usage_perc": families["vllm:gpu_cache_usage_perc"]}
    inventory.save()
    after = plan_query(Gauge("kv_usage"), scope=Scope(fleet), window=WINDOW)
    assert isinstance(after, Plan)
    assert after.keys["kv_usage"].name == "vllm:kv_cache_usage_perc"
