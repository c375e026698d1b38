from __future__ import annotations

import pytest

from capacity.figures import Origin, Quantity
from capacity.ledgers import CapacityInputError, n_plus_one, replicas_ledger


def q(key: str, value: float | None, unit: str = "requests_per_second") -> Quantity:
    origin: Origin = "entered" if value is not None else "needs measurement"
    return Quantity(key, value, unit, origin)


def ledger(
    lam: float | None = 20.0,
    mu: float | None = 2.5,
    rho: float | None = 0.7,
    failure: float = 1,
    rollout: float = 0,
    domain: float = 1,
    current: float | None = None,
) -> dict[str, Quantity]:
    found = replicas_ledger(
        lambda_peak=q("lambda_peak_requests_per_second", lam),
        mu_good=q("mu_good_requests_per_second", mu),
        rho_target=q("rho_target_fraction", rho, "fraction"),
        failure_reserve=q("failure_reserve_replicas", failure, "replicas"),
        rollout_reserve=q("rollout_reserve_replicas", rollout, "replicas"),
        failure_domain_replicas=q("failure_domain_replicas", domain, "replicas"),
        current_replicas=None if current is None else q("current_replicas", current, "replicas"),
    )
    return {line.quantity.key: line.quantity for line in found.lines}


def test_twenty_requests_per_second_at_2_5_each_and_70_percent_need_12_steady_and_13_total() -> (
    None
):
    found = ledger()
    assert found["r_steady_unrounded_replicas"].value == pytest.approx(20 / (2.5 * 0.7))
    assert found["r_steady_replicas"].value == 12
    assert found["r_total_replicas"].value == 13


def test_an_exact_quotient_is_not_rounded_up_by_float_noise() -> None:
    assert ledger(lam=7.0, mu=1.0, rho=0.7, failure=0)["r_steady_replicas"].value == 10


def test_rollout_reserve_adds_to_the_total() -> None:
    assert ledger(rollout=2)["r_total_replicas"].value == 15


def test_n_plus_one_passes_with_its_margin_when_the_rest_stay_under_rho() -> None:
    check = n_plus_one(13, 1, 20.0, 2.5, 0.7)
    assert check.passed
    assert check.utilisation_fraction == pytest.approx(20 / (12 * 2.5))
    assert check.margin_fraction == pytest.approx(0.7 - 2 / 3)
    assert check.text().startswith("PASS: 12 of 13")


def test_n_plus_one_fails_with_a_negative_margin_on_the_current_replicas() -> None:
    found = ledger(current=12)
    current = found["n_plus_one_current_utilisation_fraction"]
    assert current.value == pytest.approx(20 / (11 * 2.5))
    assert current.note.startswith("FAIL: 11 of 12") and "margin -2.7%" in current.note


def test_losing_a_failure_domain_of_three_replicas_can_fail_what_one_loss_passes() -> None:
    found = ledger(domain=3)
    assert found["n_plus_one_utilisation_fraction"].value == pytest.approx(20 / (10 * 2.5))
    assert found["n_plus_one_utilisation_fraction"].note.startswith("FAIL")


def test_losing_every_replica_fails_without_dividing_by_zero() -> None:
    check = n_plus_one(2, 2, 20.0, 2.5, 0.7)
    assert not check.passed and check.utilisation_fraction is None
    assert "leaves none" in check.text()


def test_an_unknown_mu_good_leaves_the_answer_needing_measurement() -> None:
    found = ledger(mu=None)
    assert found["r_total_replicas"].origin == "needs measurement"
    assert found["r_total_replicas"].value is None


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"rho": 1.0}, "rho_target_fraction", r"in \(0, 1\), got 1.0"),
        ({"rho": 0.0}, "rho_target_fraction", r"in \(0, 1\), got 0.0"),
        ({"rho": float("nan")}, "rho_target_fraction", "got nan"),
        ({"lam": 0.0}, "lambda_peak_requests_per_second", "positive finite number, got 0.0"),
        ({"lam": -3.0}, "lambda_peak_requests_per_second", "got -3.0"),
        ({"mu": float("nan")}, "mu_good_requests_per_second", "got nan"),
        ({"mu": 0.0}, "mu_good_requests_per_second", "got 0.0"),
        ({"failure": -1}, "failure_reserve_replicas", "whole number >= 0, got -1"),
        ({"failure": 0.5}, "failure_reserve_replicas", "got 0.5"),
        ({"domain": 0}, "failure_domain_replicas", "whole number >= 1, got 0"),
    ],
)
def test_bad_inputs_are_refused_naming_the_input(
    kwargs: dict[str, float], field: str, message: str
) -> None:
    with pytest.raises(CapacityInputError, match=message) as caught:
        ledger(**kwargs)
    assert caught.value.field == field
