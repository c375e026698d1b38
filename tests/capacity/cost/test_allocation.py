from __future__ import annotations

import math
from typing import Any

import pytest

from capacity.cost import (
    IDLE,
    UNATTRIBUTED,
    CostInputError,
    CostReport,
    ModelBill,
    UsageRow,
    allocate,
    attribute,
)
from capacity.figures import Quantity
from slo.evaluation import Interval
from tests.capacity.cost.scenario import (
    ACME_COST_USD,
    BETA_COST_USD,
    BILL_USD,
    GAMMA_COST_USD,
    LLAMA,
    QWEN,
    UNATTRIBUTED_COST_USD,
    attribution,
    bills,
    platform,
    price,
    rows,
    rules,
)


def report(**kwargs: Any) -> CostReport:
    return allocate(bills(**kwargs), attribution(), platform_cost_usd=platform(), period="Nov")


def test_tenant_costs_plus_unattributed_plus_idle_equal_the_bill() -> None:
    found = report()
    for reconciliation in (found.reconciliation, found.usage_reconciliation):
        assert reconciliation is not None and reconciliation.ok
        assert reconciliation.bill_usd == pytest.approx(BILL_USD)
        parts = reconciliation.tenants_usd + reconciliation.unattributed_usd
        assert parts + reconciliation.idle_usd == pytest.approx(BILL_USD, rel=1e-9)
        assert abs(reconciliation.difference_usd) <= 1e-9 * BILL_USD
    assert found.bill_usd == pytest.approx(BILL_USD)
    assert found.usage_reconciliation is not None
    assert found.usage_reconciliation.idle_usd == pytest.approx(80 + 40)
    assert found.reconciliation is not None and found.reconciliation.idle_usd == 0.0


def test_the_allocation_basis_splits_each_bill_by_output_token_share() -> None:
    found = report()
    costs = {t.tenant: t.cost_usd for t in found.tenants}
    assert costs == pytest.approx(
        {
            "acme": ACME_COST_USD,
            "beta": BETA_COST_USD,
            "gamma": GAMMA_COST_USD,
            UNATTRIBUTED: UNATTRIBUTED_COST_USD,
        }
    )
    acme = found.line("acme", LLAMA)
    assert acme is not None
    assert acme.output_token_share == pytest.approx(6 / 11)
    assert acme.gpu_hours == pytest.approx(600 / 11)
    assert acme.gpu_cost_usd == pytest.approx(1200 / 11)
    assert acme.platform_cost_usd == pytest.approx(22.5)
    beta = found.tenant("beta")
    assert beta is not None and beta.model_names == (LLAMA, QWEN)
    assert beta.gpu_hours == pytest.approx(400 / 11 + 10)
    assert (beta.requests_ok, beta.requests_failed) == (580, 25)
    assert beta.prompt_tokens == 1_000_000 and beta.output_tokens == 500_000


def test_the_usage_basis_splits_busy_hours_and_keeps_idle_per_model() -> None:
    found = report()
    acme = found.line("acme", LLAMA)
    assert acme is not None
    assert acme.usage_gpu_hours == pytest.approx(60 * 6 / 11)
    assert acme.usage_cost_usd == pytest.approx(120 * 6 / 11 + 22.5)
    idle = {ln.model_name: ln for ln in found.lines if ln.kind == "idle"}
    assert set(idle) == {LLAMA, QWEN}
    assert idle[LLAMA].tenant == IDLE
    assert idle[LLAMA].usage_gpu_hours == pytest.approx(40)
    assert idle[LLAMA].usage_cost_usd == pytest.approx(80)
    assert idle[QWEN].usage_cost_usd == pytest.approx(40)
    assert idle[LLAMA].cost_usd == 0.0  # on the allocation basis the tenants carry it
    assert found.idle_cost_usd == pytest.approx(120)


def test_utilisation_is_shown_per_model() -> None:
    models = {m.model_name: m for m in report().models}
    assert models[LLAMA].busy_fraction == 0.6 and models[QWEN].busy_fraction == 0.8
    assert models[LLAMA].busy_gpu_hours == pytest.approx(60)
    assert models[LLAMA].idle_gpu_hours == pytest.approx(40)
    assert models[LLAMA].idle_cost_usd == pytest.approx(80)


def test_engine_tokens_the_gateway_did_not_see_are_an_unattributed_line() -> None:
    found = report()
    unattributed = [ln for ln in found.lines if ln.kind == "unattributed"]
    assert [(ln.model_name, ln.output_tokens) for ln in unattributed] == [
        (LLAMA, 50_000),
        (LLAMA, 50_000),
    ]
    no_rule, unseen = unattributed
    assert "no tenant rule matched" in no_rule.reason
    assert "the gateway did not see" in unseen.reason
    assert unseen.requests_ok is None and unseen.prompt_tokens is None
    models = {m.model_name: m for m in found.models}
    assert models[LLAMA].unseen_output_tokens == 50_000
    assert models[LLAMA].output_tokens == 1_100_000
    total = found.tenant(UNATTRIBUTED)
    assert total is not None and total.requests_ok is None  # not known, not zero


def test_a_gateway_counting_more_than_the_engines_is_said_and_never_negative() -> None:
    short = [
        ModelBill(LLAMA, 100.0, 0.6, price(2.0), 900_000, Interval.exact(0.9)),
        bills()[1],
    ]
    found = allocate(short, attribution(), platform_cost_usd=platform())
    models = {m.model_name: m for m in found.models}
    assert models[LLAMA].unseen_output_tokens == 0
    assert models[LLAMA].output_tokens == 1_050_000
    assert any("gateway counted 150,000 more output tokens" in n for n in found.notes)
    assert all(ln.output_tokens >= 0 and (ln.cost_usd or 0) >= 0 for ln in found.lines)
    assert found.reconciliation is not None and found.reconciliation.ok


def test_cost_per_million_good_tokens_is_an_interval_from_goodput_bounds() -> None:
    found = report()
    gamma = found.tenant("gamma")
    assert gamma is not None
    assert gamma.good_output_tokens == Interval(320_000, 360_000)
    per_m = gamma.cost_per_million_good_output_tokens_usd
    assert per_m is not None
    assert per_m.lower == pytest.approx(175 / 360_000 * 1e6)  # lower uses the upper good bound
    assert per_m.upper == pytest.approx(175 / 320_000 * 1e6)
    acme = found.tenant("acme")
    assert acme is not None and acme.good_output_tokens == Interval.exact(540_000)
    exact = acme.cost_per_million_good_output_tokens_usd
    assert exact is not None and exact.is_exact
    assert exact.lower == pytest.approx(ACME_COST_USD / 540_000 * 1e6)
    beta = found.tenant("beta")
    assert beta is not None and beta.good_output_tokens == Interval(440_000, 450_000)


def test_failed_requests_and_late_tokens_are_cost_without_good_tokens() -> None:
    found = report()
    acme = found.tenant("acme")
    assert acme is not None and acme.requests_failed == 10
    assert acme.good_output_tokens is not None
    assert acme.good_output_tokens.upper < acme.output_tokens
    assert any("cost without good tokens" in note for note in found.notes)


def test_no_price_set_shows_usage_only_and_never_a_cost() -> None:
    unpriced = [
        ModelBill(b.model_name, b.gpu_hours, b.busy_fraction, None, None, b.good_fraction)
        for b in bills()
    ]
    found = allocate(unpriced, attribution())
    assert found.price_status == "no price set"
    assert found.notes[0].startswith("no price set")
    assert found.bill_usd is None and found.gpu_bill_usd is None and found.idle_cost_usd is None
    assert found.reconciliation is None and found.usage_reconciliation is None
    for ln in found.lines:
        assert ln.cost_usd is None and ln.gpu_cost_usd is None and ln.usage_cost_usd is None
    for total in found.tenants:
        assert total.cost_usd is None
        assert total.cost_per_million_good_output_tokens_usd is None
        assert total.cost_per_million_note == "no price set"
    acme = found.tenant("acme")
    assert acme is not None and acme.output_tokens == 600_000
    assert acme.gpu_hours == pytest.approx(100 * 600_000 / 1_050_000)


def test_a_price_that_needs_measurement_is_no_price() -> None:
    found = report(qwen_price=None)
    assert found.price_status == "partly priced"
    gamma = found.tenant("gamma")
    assert gamma is not None and gamma.cost_usd is None
    acme = found.tenant("acme")
    assert acme is not None and acme.cost_usd == pytest.approx(ACME_COST_USD)
    assert found.reconciliation is not None and found.reconciliation.ok
    assert found.reconciliation.bill_usd == pytest.approx(200 + 60)


@pytest.mark.parametrize(
    ("good", "reason"),
    [
        (Interval.exact(0.0), "no good output tokens"),
        (Interval(0.0, 0.5), "lower bound 0"),
    ],
)
def test_zero_good_tokens_give_no_cost_per_million_and_say_why(good: Interval, reason: str) -> None:
    found = report(llama_good=good)
    acme = found.tenant("acme")
    assert acme is not None and acme.cost_usd == pytest.approx(ACME_COST_USD)
    assert acme.cost_per_million_good_output_tokens_usd is None
    assert reason in acme.cost_per_million_note


def test_an_unknown_good_fraction_gives_no_good_tokens_and_says_so() -> None:
    unknown = [ModelBill(LLAMA, 100.0, 0.6, price(2.0), 1_100_000, None), bills()[1]]
    found = allocate(unknown, attribution(), platform_cost_usd=platform())
    acme = found.tenant("acme")
    assert acme is not None and acme.good_output_tokens is None
    assert acme.cost_per_million_good_output_tokens_usd is None
    assert "good fraction" in acme.cost_per_million_note


def test_a_model_without_output_tokens_leaves_its_whole_bill_idle() -> None:
    spare = ModelBill("spare-70b", 10.0, 0.1, price(5.0), 0, Interval.exact(1.0))
    found = allocate([*bills(), spare], attribution(), platform_cost_usd=platform())
    idle = found.line(IDLE, "spare-70b", "idle")
    assert idle is not None and idle.cost_usd == pytest.approx(50)
    assert idle.usage_cost_usd == pytest.approx(50)
    for reconciliation in (found.reconciliation, found.usage_reconciliation):
        assert reconciliation is not None and reconciliation.ok
        assert reconciliation.bill_usd == pytest.approx(BILL_USD + 50)


def test_an_unmeasured_busy_fraction_leaves_the_usage_basis_unknown() -> None:
    unmeasured = [ModelBill(LLAMA, 100.0, None, price(2.0), 1_100_000, Interval.exact(0.9))]
    llama_only = attribute([r for r in rows() if r.model_name == LLAMA], rules())
    found = allocate(unmeasured, llama_only)
    acme = found.tenant("acme")
    assert acme is not None and acme.cost_usd == pytest.approx(1200 / 11)
    assert acme.usage_cost_usd is None and acme.usage_gpu_hours is None
    assert found.reconciliation is not None and found.reconciliation.ok
    assert any("busy fraction not measured" in note for note in found.notes)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu_hours": -1.0}, "gpu_hours"),
        ({"gpu_hours": math.nan}, "gpu_hours"),
        ({"gpu_hours": math.inf}, "gpu_hours"),
        ({"busy_fraction": 1.5}, "busy_fraction"),
        ({"busy_fraction": math.nan}, "busy_fraction"),
        ({"engine_output_tokens": -10.0}, "engine_output_tokens"),
        ({"price_per_gpu_hour_usd": price(-2.0)}, "price_per_gpu_hour_usd"),
        ({"price_per_gpu_hour_usd": price(math.nan)}, "price_per_gpu_hour_usd"),
        ({"good_fraction": Interval(0.5, 1.5)}, "good_fraction"),
    ],
)
def test_negative_nan_and_out_of_range_bills_are_rejected_naming_the_field(
    change: dict[str, Any], field: str
) -> None:
    given: dict[str, Any] = {
        "model_name": LLAMA,
        "gpu_hours": 1.0,
        "busy_fraction": 0.5,
        "price_per_gpu_hour_usd": price(2.0),
        "engine_output_tokens": 10.0,
        "good_fraction": None,
    }
    given.update(change)
    with pytest.raises(CostInputError) as raised:
        ModelBill(**given)
    assert raised.value.field == field


@pytest.mark.parametrize("value", [-60.0, math.nan, math.inf])
def test_a_negative_or_nan_platform_cost_is_rejected(value: float) -> None:
    with pytest.raises(CostInputError) as raised:
        allocate(bills(), attribution(), platform_cost_usd=platform(value))
    assert raised.value.field == "platform_cost_usd"


def test_a_cost_in_another_currency_is_rejected() -> None:
    euros = Quantity("platform_cost_usd", 60.0, "eur", "entered")
    with pytest.raises(CostInputError, match="USD"):
        allocate(bills(), attribution(), platform_cost_usd=euros)


def test_usage_for_a_model_without_a_bill_is_rejected() -> None:
    with pytest.raises(CostInputError) as raised:
        allocate(bills()[:1], attribution())
    assert raised.value.field == "bills"
    assert QWEN in str(raised.value)


def test_gateway_and_engine_rows_of_one_model_are_rejected_as_double_counting() -> None:
    engine = UsageRow(LLAMA, {"instance": "r1"}, 1, 0, 1, 1, source="engine")
    with pytest.raises(CostInputError) as raised:
        allocate(bills(), attribute([*rows(), engine], rules()))
    assert raised.value.field == "source"
