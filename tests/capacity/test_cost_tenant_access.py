"""A tenant viewer of acme on the simulated fleet (tests/capacity/conftest.py: four tenants
with rules): the cost page, its CSV and JSON show acme alone, and nothing of the other
tenants (names, rule counts, stored reports holding every tenant, or their figures)."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from django.test import Client
from django.urls import reverse

from capacity.pages import cost as cost_pages
from capacity.services import cost_report_store
from inventory.models import Fleet
from tests.roles import user_with_role

OTHERS = ("globex", "hooli", "initech", "umbrella", "unattributed")


def _window() -> dict[str, str]:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    return {"from": cost_pages.iso(end - timedelta(hours=1)), "to": cost_pages.iso(end)}


@pytest.fixture
def acme_client(sim_fleet: Fleet) -> Client:
    client = Client()
    client.force_login(user_with_role("acme-viewer", "tenant", fleet_slug="sim", tenant="acme"))
    return client


def _numbers(data: Any) -> Iterator[float]:
    if isinstance(data, dict):
        data = list(data.values())
    if isinstance(data, list):
        for item in data:
            yield from _numbers(item)
    elif isinstance(data, float | int) and not isinstance(data, bool):
        yield data


def _others_figures(owner_client: Client, window: dict[str, str]) -> set[str]:
    """The other tenants' costs as the page writes them, less any text that is also one of
    the figures acme may see (its own row, the fleet's bill, the per-model costs): "3.94"
    is no leak when acme's own cost per million good tokens rounds to it too."""
    whole = owner_client.get(reverse("capacity-cost-json", args=["sim"]), window).json()
    tenants = whole.pop("tenants")
    mine = [whole, *(t for t in tenants if t["tenant"] == "acme")]
    shown = {cost_pages.money_text(value) for value in _numbers(mine)}
    costs = [t["cost_usd"] for t in tenants if t["tenant"] != "acme"]
    return {text for cost in costs if cost and (text := cost_pages.money_text(cost)) not in shown}


def test_the_tenant_viewer_sees_acme_alone_on_the_page_csv_and_json(
    acme_client: Client, owner_client: Client
) -> None:
    window = _window()
    figures = _others_figures(owner_client, window)
    assert figures, "no other tenant's cost to look for"
    page = acme_client.get(reverse("capacity-cost-fleet", args=["sim"]), window)
    assert page.status_code == 200
    content = page.content.decode()
    assert "scoped to tenant acme" in content
    data = json.loads(acme_client.get(reverse("capacity-cost-json", args=["sim"]), window).content)
    assert [t["tenant"] for t in data["tenants"]] == ["acme"]
    csv = acme_client.get(reverse("capacity-cost-csv", args=["sim"]), window).content.decode()
    assert set(pd.read_csv(io.StringIO(csv))["tenant"]) == {"acme"}
    for body in (content, json.dumps(data), csv):
        for other in OTHERS:
            assert other not in body, other
        for figure in figures:
            # As a number of its own: "4.25" inside acme's 14.2517 is not another's figure.
            alone = rf"(?<![\d.]){re.escape(figure)}(?!\d)"
            assert re.search(alone, body) is None, (figure, re.search(alone, body))


def test_another_tenants_name_is_a_404_and_the_index_hides_rules_and_stored_reports(
    acme_client: Client, owner_client: Client, sim_fleet: Fleet
) -> None:
    end = datetime.now(UTC)
    stored = cost_report_store(
        fleet=sim_fleet, start=end - timedelta(hours=1), end=end, backend="local"
    )
    assert stored is not None
    for name in ("capacity-cost-fleet", "capacity-cost-json", "capacity-cost-csv"):
        query: dict[str, Any] = {**_window(), "tenant": "globex"}
        assert acme_client.get(reverse(name, args=["sim"]), query).status_code == 404
    index = acme_client.get(reverse("capacity-cost")).content.decode()
    assert 'data-fleet="sim"' in index
    report_csv = reverse("capacity-cost-report-csv", args=["sim", stored.pk])
    assert "Tenant rules" not in index and "Stored reports" not in index
    # No link to the stored report (not a bare "CSV": the page's CSRF token may spell it).
    assert report_csv not in index and " CSV</a>" not in index
    assert report_csv in owner_client.get(reverse("capacity-cost")).content.decode()
    assert acme_client.get(report_csv).status_code == 403


def test_a_tenant_without_usage_in_the_period_is_not_told_the_others_names(
    sim_fleet: Fleet,
) -> None:
    client = Client()
    client.force_login(user_with_role("n", "tenant", fleet_slug="sim", tenant="nobody-yet"))
    response = client.get(reverse("capacity-cost-fleet", args=["sim"]), _window())
    assert response.status_code == 400
    body = response.content.decode()
    assert "no usage of tenant &#x27;nobody-yet&#x27; in this period" in body
    for other in ("acme", *OTHERS):
        assert other not in body, other
