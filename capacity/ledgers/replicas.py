"""Replicas: the steady requirement at peak, the reserves, and the N+1 check.

`R_steady = ceil(lambda_peak / (mu_good x rho_target))`: each replica serves at most
mu_good good requests per second and is run at rho_target so queues stay short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from capacity.figures import Ledger, Line, Quantity, derived


class CapacityInputError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def check_rate(q: Quantity) -> float | None:
    """A rate: None when it needs measurement, an error when it is not a positive number."""
    if q.value is None:
        return None
    v = float(q.value)
    if math.isnan(v) or math.isinf(v) or v <= 0:
        raise CapacityInputError(q.key, f"must be a positive finite number, got {q.value!r}")
    return v


def check_rho(q: Quantity) -> float | None:
    if q.value is None:
        return None
    v = float(q.value)
    if not (0 < v < 1):  # NaN fails this too
        raise CapacityInputError(q.key, f"must be a fraction in (0, 1), got {q.value!r}")
    return v


def check_count(q: Quantity | None, minimum: int = 0) -> int | None:
    if q is None or q.value is None:
        return None
    v = float(q.value)
    if not math.isfinite(v) or not v.is_integer() or v < minimum:
        raise CapacityInputError(q.key, f"must be a whole number >= {minimum}, got {q.value!r}")
    return int(v)


def steady_unrounded(lam: float, mu: float, rho: float) -> float:
    return lam / (mu * rho)


@dataclass(frozen=True)
class NPlusOne:
    replicas_replicas: int
    lost_replicas: int
    utilisation_fraction: float | None  # None: nothing left to serve
    rho_target_fraction: float
    passed: bool

    @property
    def margin_fraction(self) -> float | None:
        """rho_target - utilisation: positive is spare, negative is the overload."""
        if self.utilisation_fraction is None:
            return None
        return self.rho_target_fraction - self.utilisation_fraction

    def text(self) -> str:
        left = self.replicas_replicas - self.lost_replicas
        if self.utilisation_fraction is None:
            return f"FAIL: losing {self.lost_replicas} of {self.replicas_replicas} leaves none"
        verdict = "PASS" if self.passed else "FAIL"
        return (
            f"{verdict}: {left} of {self.replicas_replicas} left at peak run at "
            f"{self.utilisation_fraction:.1%} against rho_target {self.rho_target_fraction:.0%} "
            f"(margin {self.margin_fraction or 0.0:+.1%})"
        )


def n_plus_one(replicas: int, lost: int, lam: float, mu: float, rho: float) -> NPlusOne:
    left = replicas - lost
    if left <= 0:
        return NPlusOne(replicas, lost, None, rho, False)
    utilisation = lam / (left * mu)
    return NPlusOne(replicas, lost, utilisation, rho, utilisation <= rho)


def replicas_ledger(
    *,
    lambda_peak: Quantity,
    mu_good: Quantity,
    rho_target: Quantity,
    failure_reserve: Quantity,
    rollout_reserve: Quantity,
    failure_domain_replicas: Quantity | None = None,
    current_replicas: Quantity | None = None,
) -> Ledger:
    lam, mu, rho = check_rate(lambda_peak), check_rate(mu_good), check_rho(rho_target)
    failure = check_count(failure_reserve)
    rollout = check_count(rollout_reserve)
    domain = check_count(failure_domain_replicas, minimum=1) or 1
    current = check_count(current_replicas, minimum=0)
    lines = [
        Line("peak arrival rate", lambda_peak, "lambda_peak"),
        Line("good requests per second per replica", mu_good, "mu_good"),
        Line("target utilisation", rho_target, "rho_target"),
    ]
    notes: list[str] = []
    known = lam is not None and mu is not None and rho is not None
    unrounded = steady_unrounded(lam, mu, rho) if lam and mu and rho else None
    steady = math.ceil(unrounded - 1e-9) if unrounded is not None else None
    lines.append(
        Line(
            "steady replicas at peak (unrounded)",
            derived("r_steady_unrounded_replicas", unrounded, "replicas"),
            "lambda_peak / (mu_good x rho_target)",
        )
    )
    lines.append(
        Line(
            "steady replicas at peak",
            derived("r_steady_replicas", steady, "replicas"),
            "ceil(lambda_peak / (mu_good x rho_target))",
        )
    )
    lines.append(Line("failure reserve", failure_reserve, "R_failure"))
    lines.append(Line("rollout reserve", rollout_reserve, "R_rollout"))
    total = None
    if steady is not None and failure is not None and rollout is not None:
        total = steady + failure + rollout
    lines.append(
        Line(
            "replicas required",
            derived("r_total_replicas", total, "replicas"),
            "R_steady + R_failure + R_rollout",
        )
    )
    if not known:
        missing = [q.key for q in (lambda_peak, mu_good, rho_target) if q.value is None]
        notes.append(f"needs measurement: {', '.join(missing)}; no replica count is given")
    if failure == 0:
        notes.append("no failure reserve: a lost replica at peak is absorbed by no one")
    if total is not None and lam and mu and rho:
        check = n_plus_one(total, domain, lam, mu, rho)
        lines.append(n_plus_one_line("n_plus_one", "required", check))
        notes.append(f"N+1 on the requirement (losing {domain}): {check.text()}")
    if current is not None and lam and mu and rho:
        check = n_plus_one(current, domain, lam, mu, rho)
        lines.append(
            Line(
                "current replicas",
                current_replicas or derived("current_replicas", current, "replicas"),
                "as given",
            )
        )
        lines.append(n_plus_one_line("n_plus_one_current", "current", check))
        notes.append(f"N+1 on the current {current} replicas (losing {domain}): {check.text()}")
    return Ledger("replicas", tuple(lines), tuple(notes))


def n_plus_one_line(prefix: str, which: str, check: NPlusOne) -> Line:
    return Line(
        f"N+1 ({which}): utilisation with {check.lost_replicas} lost at peak",
        derived(
            f"{prefix}_utilisation_fraction",
            check.utilisation_fraction,
            "fraction",
            note=check.text(),
        ),
        "lambda_peak / ((R - lost) x mu_good), pass when <= rho_target",
    )
