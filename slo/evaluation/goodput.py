"""Goodput: requests meeting every per-request objective at once.

The metrics give each objective's fraction separately, never jointly, so with several
objectives the joint fraction is known only within the Fréchet bounds
`max(0, sum(a_i) - (n - 1)) .. min(a_i)`; with one objective it is that objective's
fraction (exact when the threshold is a bucket edge). Fractions are taken over every
finished request (so a request that errored before any token counts as a miss), and
requests that finished with `error` always count as misses.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from slo.evaluation.figures import Goodput, Interval, ReplicaGoodRate

ERROR_REASON = "error"
# A replica is busy in an hour when it finished at least this share of its busiest hour.
BUSY_SHARE = 0.5


def joint_bounds(fractions: Sequence[Interval]) -> Interval:
    if len(fractions) == 1:
        return fractions[0]
    lower = max(0.0, sum(f.lower for f in fractions) - (len(fractions) - 1))
    upper = min(f.upper for f in fractions)
    return Interval(min(lower, upper), upper)


def over_finished(fraction: Interval, events: float, finished: float | None) -> Interval:
    """An objective's fraction of its own events, as a fraction of every finished request:
    TTFT counts only requests that got a first token."""
    if not finished or finished <= 0:
        return fraction
    share = min(1.0, events / finished)
    return Interval(fraction.lower * share, fraction.upper * share)


def goodput(
    fractions: Mapping[str, tuple[Interval, float]],
    *,
    left_out: Sequence[str],
    finished: float | None,
    errors: float | None,
    output_tokens: float | None,
    seconds: float,
    replicas: Sequence[ReplicaGoodRate] = (),
) -> Goodput:
    """`fractions`: per-request objective -> (attainment, its events) over the window."""
    notes = [
        "vLLM does not say whether an abort came before the first token, so aborts count "
        "as the SLO's bad finish reasons say rather than being set apart"
    ]
    if not fractions or not finished or seconds <= 0:
        return Goodput(None, None, None, False, tuple(fractions), tuple(left_out),
                       "no finished requests in the window", tuple(replicas))  # fmt: skip
    parts = [over_finished(f, events, finished) for f, events in fractions.values()]
    if errors and "success" not in fractions:
        parts.append(Interval.exact(max(0.0, 1.0 - errors / finished)))
    joint = joint_bounds(parts)
    rate = finished / seconds
    exact = joint.is_exact
    if not exact:
        notes.insert(0, "bounds: the metrics give each objective's fraction, not joint ones")
    tokens = None
    if output_tokens is not None:
        tokens = joint.scaled(output_tokens / seconds)
        notes.append("good output tokens assume good and missed requests have the same mean length")
    return Goodput(joint, joint.scaled(rate), tokens, exact, tuple(fractions),
                   tuple(left_out), "; ".join(notes), tuple(replicas))  # fmt: skip


def mu_good(instance: str, hours: Sequence[tuple[float, float, float, bool]]) -> ReplicaGoodRate:
    """`hours`: (hour end, finished requests, good requests (lower bound), every objective
    held) for one replica. mu_good is the median good-request rate of the busy hours in
    which every objective held; the hours it came from are listed."""
    if not hours:
        return ReplicaGoodRate(instance, None, (), "no hourly data for this replica")
    busiest = max(finished for _, finished, _, _ in hours)
    chosen = [
        (t, good)
        for t, finished, good, held in hours
        if held and busiest > 0 and finished >= BUSY_SHARE * busiest
    ]
    if not chosen:
        return ReplicaGoodRate(instance, None, (),
                               "no busy hour in which every objective held")  # fmt: skip
    rate = statistics.median(good / 3600.0 for _, good in chosen)
    stamps = tuple(
        datetime.fromtimestamp(t - 3600, UTC).strftime("%Y-%m-%d %H:%MZ") for t, _ in chosen
    )
    return ReplicaGoodRate(
        instance, rate, stamps,
        f"median of {len(chosen)} busy hour(s) (>= {BUSY_SHARE:.0%} of its busiest) within SLO",
    )  # fmt: skip
