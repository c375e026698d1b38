"""`manage.py cost_report` over the simulated fleet (tests/capacity/conftest.py)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from capacity.pages.cost import iso
from inventory.models import Fleet


def _period() -> list[str]:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    return ["--from", iso(end - timedelta(hours=1)), "--to", iso(end)]


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("cost_report", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_the_bill_tenant_and_model_tables(sim_fleet: Fleet) -> None:
    text = _run("sim", *_period())
    assert text.startswith("Cost of sim: ")
    assert "Price: priced (entered for fleet sim)" in text
    for header in ("tenant", "requests ok", "USD / 1M good tokens", "model", "busy"):
        assert header in text
    lines = text.splitlines()
    for tenant in ("acme", "hooli", "initech", "unattributed", "idle", "bill"):
        assert any(line.startswith(tenant + " ") for line in lines), tenant
    assert "llama-3.1-8b-instruct" in text and "llama-3.1-70b-instruct" in text
    assert "usage basis: tenants + unattributed + idle = bill: " in text
    assert "✓" in text


def test_csv_output_parses_and_adds_up_to_the_json_bill(sim_fleet: Fleet) -> None:
    period = _period()
    frame = pd.read_csv(io.StringIO(_run("sim", *period, "--csv")))
    data = json.loads(_run("sim", *period, "--json"))
    assert data["fleet"] == "sim" and data["backend"] == "local"
    assert {"acme", "unattributed", "idle"} <= set(frame["tenant"])
    assert frame["cost_usd"].sum() == pytest.approx(data["bill_usd"], rel=1e-9)
    recon = data["reconciliation"]
    assert recon["ok"] is True


def test_a_period_with_no_usage_says_so(sim_fleet: Fleet) -> None:
    text = _run("sim", "--from", "2026-01-01", "--to", "2026-01-02")
    assert "No usage in this period" in text
    assert "Price: priced (entered for fleet sim)" in text


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--from", "last week", "--to", "2026-11-02"], "--from 'last week'"),
        (["--from", "2026-11-01", "--to", "2026-11-31"], "--to '2026-11-31'"),
        (["--from", "2026-11-02", "--to", "2026-11-01"], "--from (2026-11-02 00:00 UTC) must be"),
        (["--from", "2026-01-01", "--to", "2999-01-01"], "--to (2999-01-01 00:00 UTC) is in the"),
        (["--from", "2026-11-01", "--to", "2026-11-02", "--backend", "x"], "--backend must be"),
    ],
)
def test_bad_input_gives_a_command_error_naming_the_flag(
    sim_fleet: Fleet, args: list[str], flag: str
) -> None:
    with pytest.raises(CommandError) as raised:
        _run("sim", *args)
    message = str(raised.value)
    assert flag in message
    assert "\n" not in message


def test_an_unknown_fleet_is_a_command_error(db: None) -> None:
    with pytest.raises(CommandError, match="no fleet 'nowhere'"):
        _run("nowhere", "--from", "2026-11-01", "--to", "2026-11-02")


def test_a_tenant_flag_prints_that_tenants_lines_alone(sim_fleet: Fleet) -> None:
    data = json.loads(_run("sim", *_period(), "--json", "--tenant", "globex"))
    assert data["tenant_scope"] == "globex"
    assert [t["tenant"] for t in data["tenants"]] == ["globex"]
    with pytest.raises(CommandError, match=r"^--tenant: no tenant 'nobody' in this period"):
        _run("sim", *_period(), "--tenant", "nobody")
