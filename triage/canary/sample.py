"""How many requests a canary needs, and how long it runs to get them.

The breached percentile is a fraction of requests over the objective's threshold, so
the change it has to show is a binomial proportion moving from the incident's bad
fraction p0 down to the objective's allowed bad fraction p1. The one-sample test of
p = p0 against p = p1 (one-sided) needs

    n = ((z_{1-a} * sqrt(p1 (1 - p1)) + z_{1-b} * sqrt(p0 (1 - p0))) / (p0 - p1))^2

requests: the normal approximation of the one-sample binomial test's power.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from triage.canary.types import BreachedObjective, Duration, SampleSize

ALPHA = 0.05  # one-sided: the canary only has to show it got better
POWER = 0.80
# Short canaries see a few minutes of one traffic mix: ten minutes at least, so a burst
# or a lull does not decide alone.
FLOOR_MINUTES = 10
HOUR_MINUTES = 60
# scipy is not a dependency; the standard library's normal quantiles are exact enough.
_NORMAL = NormalDist()


def z(probability: float) -> float:
    """The standard normal quantile: z(0.95) = 1.645, z(0.8) = 0.842."""
    return _NORMAL.inv_cdf(probability)


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.3g}%"


def sample_size(objective: BreachedObjective) -> SampleSize:
    """Requests needed to see the objective's bad fraction fall from the incident's to the
    allowed one, at ALPHA one-sided and POWER. Raises ValueError when there is no breach
    (p0 <= p1: there is no change to detect)."""
    p0, p1 = objective.observed_bad, objective.allowed_bad
    if not p0 > p1:
        raise ValueError("sample_size: the objective is not breached (p0 <= p1)")
    z_alpha, z_beta = z(1.0 - ALPHA), z(POWER)
    spread = z_alpha * math.sqrt(p1 * (1.0 - p1)) + z_beta * math.sqrt(p0 * (1.0 - p0))
    # round() first: a float product of exactly 76 must not become 77.
    n = max(1, math.ceil(round((spread / (p0 - p1)) ** 2, 9)))
    what = "over the threshold" if objective.kind != "success" else "that finished badly"
    counted = objective.unit
    how = (
        f"In the incident {_pct(p0)} of {counted} were {what} (p0); the objective allows "
        f"{_pct(p1)} (p1). To show a one-sided drop from p0 to p1 with a 5% false-alarm "
        f"rate and 80% power, a one-sample binomial test needs n = ((z(0.95) x sqrt(p1 (1 - "
        f"p1)) + z(0.80) x sqrt(p0 (1 - p0))) / (p0 - p1))^2 = (({z_alpha:.3f} x "
        f"{math.sqrt(p1 * (1 - p1)):.4f} + {z_beta:.3f} x {math.sqrt(p0 * (1 - p0)):.4f}) / "
        f"{p0 - p1:.4g})^2, rounded up: {n} requests on the canary."
    )
    if objective.kind == "itl":
        # Token gaps of one request share its batches, so they are not independent draws:
        # counting requests, not gaps, keeps the sample honest.
        how += (
            " ITL counts token gaps, but the gaps of one request share its batches and are "
            "not independent, so n is counted in requests (each gives at least one gap)."
        )
    return SampleSize(n, p0, p1, ALPHA, POWER, z_alpha, z_beta, how)


def duration(requests: int, *, request_rate_per_second: float | None, share: float) -> Duration:
    """Minutes to collect `requests` when the canary sees `share` of the model's rate."""
    if request_rate_per_second is None or not request_rate_per_second > 0:
        return Duration(
            None,
            request_rate_per_second,
            share,
            False,
            f"The model's request rate is unknown, so the duration is too: run until the "
            f"canary has served {requests} requests, and at least {FLOOR_MINUTES} minutes.",
        )
    canary_rate = request_rate_per_second * share
    seconds = requests / canary_rate
    minutes = max(FLOOR_MINUTES, math.ceil(round(seconds / 60.0, 9)))
    within_hour = minutes <= HOUR_MINUTES
    how = (
        f"{requests} requests / ({request_rate_per_second:.3g} requests/s x {_pct(share)} of "
        f"the traffic = {canary_rate:.3g} requests/s on the canary) = {seconds:.0f} s, "
        f"rounded up to whole minutes with a floor of {FLOOR_MINUTES}: {minutes} min."
    )
    if not within_hour:
        how += (
            f" At the current traffic the canary cannot collect its sample within an hour "
            f"({minutes} min): run it at a busier time, give it a larger share, or accept "
            f"that a shorter run cannot tell the change from noise."
        )
    return Duration(minutes, request_rate_per_second, share, within_hour, how)
