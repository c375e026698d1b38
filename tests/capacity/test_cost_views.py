"""The cost pages over the simulated fleet (tests/capacity/conftest.py): four tenants with
rules, umbrella and the prober unattributed, 4 USD per GPU-hour and a platform cost."""

from __future__ import annotations

import html
import io
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from django.test import Client, override_settings
from django.urls import reverse

from capacity.models import FleetPrice
from capacity.pages import cost as cost_pages
from capacity.services import cost_report_store
from fleetscope.lib.redis_settings import redis_caches
from inventory.models import Fleet
from tests.redisfakes import TIMEOUTS

RULED = ("acme", "globex", "hooli", "initech")


def _window(hours: float = 1.0) -> dict[str, str]:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    start = end - timedelta(hours=hours)
    return {"from": cost_pages.iso(start), "to": cost_pages.iso(end)}


def _json(client: Client, query: dict[str, str]) -> dict[str, Any]:
    response = client.get(reverse("capacity-cost-json", args=["sim"]), query)
    assert response.status_code == 200
    data: dict[str, Any] = json.loads(response.content)
    return data


def _tenant_names(content: str) -> set[str]:
    return set(re.findall(r'data-tenant="([^"]+)"', content))


def test_the_page_shows_each_tenants_cost_and_range_the_unattributed_and_idle_lines(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    window = _window()
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), window)
    assert response.status_code == 200
    content = response.content.decode()
    data = _json(owner_client, window)
    tenants = {t["tenant"]: t for t in data["tenants"]}
    assert "unattributed" in tenants
    assert set(tenants) - {"unattributed"} <= set(RULED)
    assert _tenant_names(content) == set(tenants) | {"idle", "bill"}
    for name, total in tenants.items():
        row = re.search(rf'<tr data-tenant="{name}".*?</tr>', content, re.S)
        assert row is not None, name
        shown = cost_pages.money_text(total["cost_usd"])
        assert shown in row.group(0), (name, shown)
        lower = total["cost_per_million_good_output_tokens_usd_lower"]
        upper = total["cost_per_million_good_output_tokens_usd_upper"]
        assert lower is not None and upper is not None and lower < upper, name
        expected = f"{cost_pages.money_text(lower)}–{cost_pages.money_text(upper)}"
        assert expected in row.group(0), (name, expected)
    idle = re.search(r'<tr data-tenant="idle".*?</tr>', content, re.S)
    assert idle is not None
    assert cost_pages.money_text(data["idle_cost_usd"]) in idle.group(0)
    assert "Period" in content and window["from"][:10] in content and "UTC" in content
    assert "embedded store (local)" in content
    assert "Under-used GPUs cost more per token" in content
    assert 'id="cost-trend"' in content
    # Where every figure came from: GPU-hours and good fraction sources per model.
    assert "GPU(s) seen by DCGM" in content
    assert "goodput (bounds) of the fleet-wide" in content
    assert "entered for fleet sim" in content


def test_the_reconciliation_holds_on_the_page_and_in_the_json_export(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    window = _window()
    data = _json(owner_client, window)
    for key in ("reconciliation", "usage_reconciliation"):
        recon = data[key]
        parts = recon["tenants_usd"] + recon["unattributed_usd"] + recon["idle_usd"]
        assert parts == pytest.approx(recon["bill_usd"], rel=1e-9)
        assert recon["ok"] is True
    # The idle line is a real cost on the usage basis.
    assert data["usage_reconciliation"]["idle_usd"] > 0
    assert data["usage_reconciliation"]["unattributed_usd"] > 0
    content = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), window)
    text = content.content.decode()
    usage = data["usage_reconciliation"]
    line = (
        "tenants + unattributed + idle = bill: "
        f"{cost_pages.money_text(usage['tenants_usd'])} + "
        f"{cost_pages.money_text(usage['unattributed_usd'])} + "
        f"{cost_pages.money_text(usage['idle_usd'])} = "
        f"{cost_pages.money_text(usage['bill_usd'])} USD ✓"
    )
    assert line in text


def test_with_no_price_set_the_page_shows_usage_only_and_json_costs_are_null(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    FleetPrice.objects.filter(fleet=sim_fleet).delete()
    window = _window()
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), window)
    assert response.status_code == 200
    content = response.content.decode()
    assert 'id="no-price"' in content
    assert "No price set for Simulated: usage only." in content
    assert reverse("admin:capacity_fleetprice_add") in content
    assert "USD per 1M" not in content  # no cost column
    assert "$0" not in content and ">0.00<" not in content
    assert 'data-tenant="acme"' in content  # usage still shown
    data = _json(owner_client, window)
    assert data["price_status"] == "no price set"
    for key in ("gpu_bill_usd", "platform_cost_usd", "bill_usd", "idle_cost_usd"):
        assert data[key] is None, key
    for total in data["tenants"]:
        assert total["cost_usd"] is None and total["usage_cost_usd"] is None
        assert total["cost_per_million_good_output_tokens_usd_lower"] is None
        assert total["output_tokens"] > 0
    assert data["gpu_hours"] > 0


def test_a_period_the_store_holds_only_part_of_says_so_on_the_page_and_in_the_exports(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    """The default day holds the recording's minutes only: its GPU-hours are theirs."""
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]))
    content = response.content.decode()
    shown = re.search(r'<dd id="coverage"[^>]*>(.*?)</dd>', content, re.S)
    assert shown is not None
    assert shown.group(1).startswith("The embedded store holds ")
    assert "the rest is unknown, not zero." in shown.group(1)
    data = _json(owner_client, {})
    assert data["notes"][0].startswith("the embedded store holds ")
    assert "of 24.0 h)" in data["notes"][0]


def test_csv_and_json_exports_parse_and_carry_the_same_totals_as_the_page(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    window = _window()
    csv = owner_client.get(reverse("capacity-cost-csv", args=["sim"]), window)
    assert csv.status_code == 200
    assert csv["Content-Type"].startswith("text/csv")
    stamp = window["from"][:10].replace("-", "")
    assert re.search(rf'filename="fleetscope-cost-sim-{stamp}T\d{{4}}Z-\d{{8}}T\d{{4}}Z\.csv"',
                     csv["Content-Disposition"])  # fmt: skip
    frame = pd.read_csv(io.StringIO(csv.content.decode()))
    response = owner_client.get(reverse("capacity-cost-json", args=["sim"]), window)
    assert 'filename="fleetscope-cost-sim-' in response["Content-Disposition"]
    data = json.loads(response.content)
    assert data["fleet"] == "sim" and data["start"] == window["from"]
    assert frame["cost_usd"].sum() == pytest.approx(data["bill_usd"], rel=1e-9)
    assert frame["usage_cost_usd"].sum() == pytest.approx(data["bill_usd"], rel=1e-9)
    page = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), window)
    content = page.content.decode()
    total = re.search(r'id="bill-total".*?</div>', content, re.S)
    assert total is not None
    assert cost_pages.money_text(data["bill_usd"]) in total.group(0)
    gpu_hours = re.search(r'id="bill-gpu-hours".*?</div>', content, re.S)
    assert gpu_hours is not None
    assert f"{data['gpu_hours']:,.3f}" in gpu_hours.group(0)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"from": "2026-11-02", "to": "2026-11-01"}, "from (2026-11-02 00:00 UTC) must be before"),
        ({"from": "yesterday"}, "from 'yesterday' is not an ISO 8601 date or time"),
        ({"to": "2026-13-01"}, "to '2026-13-01' is not an ISO 8601 date or time"),
        ({"from": "2026-01-01", "to": "2026-06-01"}, "at most 92 days"),
        ({"to": "2999-01-01"}, "is in the future"),
        ({"backend": "graphite"}, "backend must be one of local, prometheus, not 'graphite'"),
    ],
)
def test_bad_params_each_give_their_400_message(
    sim_fleet: Fleet, owner_client: Client, query: dict[str, str], message: str
) -> None:
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), query)
    assert response.status_code == 400
    assert message in html.unescape(response.content.decode())
    exported = owner_client.get(reverse("capacity-cost-json", args=["sim"]), query)
    assert exported.status_code == 400
    assert message in json.loads(exported.content)["error"]
    assert owner_client.get(reverse("capacity-cost-csv", args=["sim"]), query).status_code == 400


def test_a_period_with_no_data_says_so_without_costs(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    end = datetime.now(UTC) - timedelta(days=3)
    query = {"from": cost_pages.iso(end - timedelta(hours=6)), "to": cost_pages.iso(end)}
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), query)
    assert response.status_code == 200
    content = response.content.decode()
    assert "No usage in this period." in content
    assert 'id="no-price"' not in content  # a price is entered: no usage is not "no price"
    assert 'id="tenant-table"' not in content
    assert "per 1M" not in content


def test_a_stored_report_is_listed_and_its_csv_downloads(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    record = cost_report_store(
        fleet=sim_fleet, start=end - timedelta(hours=1), end=end, backend="local"
    )
    assert record is not None
    page = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]))
    url = reverse("capacity-cost-report-csv", args=["sim", record.pk])
    assert url in page.content.decode()
    index = owner_client.get(reverse("capacity-cost"))
    assert url in index.content.decode()
    response = owner_client.get(url)
    assert response.status_code == 200
    assert "fleetscope-cost-sim-" in response["Content-Disposition"]
    frame = pd.read_csv(io.StringIO(response.content.decode()))
    assert "unattributed" in set(frame["tenant"])
    missing = owner_client.get(reverse("capacity-cost-report-csv", args=["sim", record.pk + 99]))
    assert missing.status_code == 404


def test_the_index_lists_fleets_with_their_price_status(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    Fleet.objects.create(slug="bare", name="Bare")
    content = owner_client.get(reverse("capacity-cost")).content.decode()
    assert reverse("capacity-cost-fleet", args=["sim"]) in content
    assert "4.00 USD" in content
    bare = re.search(r'<tr data-fleet="bare".*?</tr>', content, re.S)
    assert bare is not None and "no price set" in bare.group(0)


def test_the_trend_cuts_the_period_into_at_most_48_buckets() -> None:
    start = datetime(2026, 11, 1, 10, 7, tzinfo=UTC)
    for span, size in [
        (timedelta(hours=1), timedelta(minutes=5)),
        (timedelta(hours=24), timedelta(hours=1)),
        (timedelta(days=7), timedelta(days=1)),
        (timedelta(days=92), timedelta(days=2)),
    ]:
        assert cost_pages.bucket_size(start, start + span) == size
        found = cost_pages.buckets(start, start + span)
        assert len(found) <= 49
        assert found[0][0] == start and found[-1][1] == start + span
        assert all(a[1] == b[0] for a, b in zip(found, found[1:], strict=False))


def test_a_tenant_scope_shows_that_tenant_alone_with_the_same_figures(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    window = _window()
    whole = {t["tenant"]: t for t in _json(owner_client, window)["tenants"]}
    scoped_query = {**window, "tenant": "acme"}
    data = _json(owner_client, scoped_query)
    assert [t["tenant"] for t in data["tenants"]] == ["acme"]
    assert data["tenants"][0]["cost_usd"] == pytest.approx(whole["acme"]["cost_usd"])
    assert data["models"] == [] and data["idle_cost_usd"] is None
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), scoped_query)
    content = response.content.decode()
    assert response.status_code == 200
    assert _tenant_names(content) <= {"acme", "bill"}
    for other in ("globex", "hooli", "initech", "umbrella", "unattributed"):
        assert other not in content, other
    assert "scoped to tenant acme" in content
    csv = owner_client.get(reverse("capacity-cost-csv", args=["sim"]), scoped_query)
    frame = pd.read_csv(io.StringIO(csv.content.decode()))
    assert set(frame["tenant"]) == {"acme"}


def test_a_tenant_the_period_does_not_have_is_a_400_naming_the_tenants_it_has(
    sim_fleet: Fleet, owner_client: Client
) -> None:
    query = {**_window(), "tenant": "nobody"}
    response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), query)
    assert response.status_code == 400
    assert "no tenant &#x27;nobody&#x27; in this period (tenants: acme" in response.content.decode()
    response = owner_client.get(reverse("capacity-cost-json", args=["sim"]), query)
    assert response.status_code == 400


def test_with_redis_stopped_the_cost_page_computes_its_trend_instead_of_failing(
    sim_fleet: Fleet, owner_client: Client, closed_port: int
) -> None:
    # The trend's buckets are cached in Redis in production: a stopped Redis must cost
    # only that cache, as for the overview (tests/dashboard/test_views_overview_redis.py).
    window = _window()
    with override_settings(
        CACHES=redis_caches(f"redis://127.0.0.1:{closed_port}/0", TIMEOUTS),
        REDIS_TIMEOUT_SECONDS=TIMEOUTS.read_seconds,
    ):
        response = owner_client.get(reverse("capacity-cost-fleet", args=["sim"]), window)
        data = _json(owner_client, window)
    assert response.status_code == 200
    assert 'id="cost-trend"' in response.content.decode()
    assert data["tenants"]
