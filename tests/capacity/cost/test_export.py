from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest

from capacity.cost import (
    LINE_COLUMNS,
    TENANT_COLUMNS,
    UNATTRIBUTED,
    CostReport,
    ModelBill,
    allocate,
    report_csv,
    report_frame,
    report_json,
    tenant_frame,
)
from tests.capacity.cost.scenario import (
    BILL_USD,
    GAMMA_COST_USD,
    LLAMA,
    QWEN,
    attribution,
    bills,
    platform,
)


def priced() -> CostReport:
    return allocate(bills(), attribution(), platform_cost_usd=platform(), period="2026-11")


def unpriced() -> CostReport:
    plain = [
        ModelBill(b.model_name, b.gpu_hours, b.busy_fraction, None, None, b.good_fraction)
        for b in bills()
    ]
    return allocate(plain, attribution())


def test_the_frame_has_one_row_per_line_with_units_in_the_column_names() -> None:
    report = priced()
    frame = report_frame(report)
    assert len(frame) == len(report.lines) == 3 + 1 + 2 + 2  # tenants, unattributed, idle
    assert tuple(frame.columns) == LINE_COLUMNS
    for column in ("gpu_hours", "cost_usd", "output_tokens", "price_per_gpu_hour_usd"):
        assert column in frame.columns
    assert set(frame["kind"]) == {"tenant", "unattributed", "idle"}
    assert set(frame["model_name"]) == {LLAMA, QWEN}


def test_intervals_are_lower_and_upper_columns() -> None:
    frame = report_frame(priced())
    gamma = frame[frame["tenant"] == "gamma"].iloc[0]
    assert (gamma["good_output_tokens_lower"], gamma["good_output_tokens_upper"]) == (
        320_000,
        360_000,
    )
    assert gamma["cost_per_million_good_output_tokens_usd_lower"] == pytest.approx(
        GAMMA_COST_USD / 360_000 * 1e6
    )
    assert "good_output_tokens" not in frame.columns


def test_the_frame_sums_to_the_bill_on_both_bases() -> None:
    frame = report_frame(priced())
    assert frame["cost_usd"].sum() == pytest.approx(BILL_USD, rel=1e-9)
    assert frame["usage_cost_usd"].sum() == pytest.approx(BILL_USD, rel=1e-9)
    assert frame["gpu_hours"].sum() == pytest.approx(150)
    assert frame["usage_gpu_hours"].sum() == pytest.approx(150)


def test_csv_round_trips_through_pandas_with_the_same_totals() -> None:
    report = priced()
    back = pd.read_csv(io.StringIO(report_csv(report)), keep_default_na=False, na_values=[""])
    assert tuple(back.columns) == LINE_COLUMNS
    assert back["cost_usd"].sum() == pytest.approx(BILL_USD, rel=1e-9)
    by_tenant = back[back["kind"] != "idle"].groupby("tenant")["cost_usd"].sum()
    for total in report.tenants:
        assert by_tenant[total.tenant] == pytest.approx(total.cost_usd, rel=1e-12)
    assert back["output_tokens"].sum() == sum(ln.output_tokens for ln in report.lines)


def test_csv_leaves_unknown_figures_empty_never_zero() -> None:
    text = report_csv(unpriced())
    back = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
    assert back["cost_usd"].isna().all()
    assert back["output_tokens"].sum() == 1_550_000
    assert not re.search(r"(^|,)nan(,|$)", text, re.IGNORECASE | re.MULTILINE)


def test_json_round_trips_with_the_same_totals() -> None:
    report = priced()
    data = json.loads(report_json(report))
    assert data["period"] == "2026-11" and data["price_status"] == "priced"
    assert data["bill_usd"] == pytest.approx(BILL_USD)
    assert data["reconciliation"]["ok"] is True
    assert data["usage_reconciliation"]["idle_usd"] == pytest.approx(120)
    lines = pd.DataFrame(data["lines"])
    assert lines["cost_usd"].sum() == pytest.approx(BILL_USD, rel=1e-9)
    tenants = {t["tenant"]: t for t in data["tenants"]}
    for total in report.tenants:
        assert tenants[total.tenant]["cost_usd"] == pytest.approx(total.cost_usd, rel=1e-12)
    assert tenants[UNATTRIBUTED]["requests_ok"] is None
    models = {m["model_name"]: m for m in data["models"]}
    assert models[LLAMA]["busy_fraction"] == 0.6
    assert (models[QWEN]["good_fraction_lower"], models[QWEN]["good_fraction_upper"]) == (0.8, 0.9)


def test_json_says_null_for_unknowns_and_never_nan() -> None:
    text = report_json(unpriced())
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["price_status"] == "no price set"
    assert data["bill_usd"] is None and data["reconciliation"] is None
    assert all(line["cost_usd"] is None for line in data["lines"])
    assert any(note.startswith("no price set") for note in data["notes"])


def test_the_tenant_frame_has_one_row_per_tenant_and_unattributed() -> None:
    frame = tenant_frame(priced())
    assert list(frame["tenant"]) == ["acme", "beta", "gamma", UNATTRIBUTED]
    assert tuple(frame.columns) == TENANT_COLUMNS
    assert frame["cost_usd"].sum() == pytest.approx(BILL_USD, rel=1e-9)  # idle is inside
    assert frame.set_index("tenant")["requests_ok"].isna()[UNATTRIBUTED]
