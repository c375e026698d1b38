"""Flips, sanity checks and classic mistakes, with every threshold in one place.

A flip is a finding that changes the design (another node, another parallelism, split
prefill and decode), not a tuning knob. Thresholds carry units and the reason for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from capacity.figures import Quantity, bytes_text
from capacity.ledgers import (
    RequestLengths,
    kv_bytes_per_request,
    n_plus_one,
    steady_unrounded,
)
from capacity.profiles import nameplate_memory_flag

# One p99 request taking more than this share of the KV pool leaves room for fewer than
# ten such sequences: batching collapses and the preemption rate climbs under a burst.
KV_P99_REQUEST_MAX_FRACTION_OF_POOL = 0.10
# Prefill above this share of a request's service time stalls decode steps for everyone
# batched with it (TPOT spikes); past it, separate prefill and decode pools are worth a look.
PREFILL_SHARE_SPLIT_FRACTION = 0.30
# lambda_peak within this relative distance of the mean number of requests in the system
# suggests concurrent users were entered where an arrival rate belongs.
CONCURRENCY_MATCH_RELATIVE = 0.05

THRESHOLDS: tuple[tuple[str, float, str, str], ...] = (
    (
        "kv_p99_request_max_fraction_of_pool",
        KV_P99_REQUEST_MAX_FRACTION_OF_POOL,
        "fraction",
        "more than this leaves room for fewer than 10 p99 sequences",
    ),
    (
        "prefill_share_split_fraction",
        PREFILL_SHARE_SPLIT_FRACTION,
        "fraction",
        "prefill above this share of service time stalls decode for the whole batch",
    ),
    (
        "concurrency_match_relative_fraction",
        CONCURRENCY_MATCH_RELATIVE,
        "fraction",
        "lambda_peak this close to measured concurrency is likely users, not arrivals",
    ),
)


@dataclass(frozen=True)
class Finding:
    """A flip, a sanity check or a mistake. `state` None: not decidable from the inputs."""

    name: str
    state: bool | None  # flip: True = flips the design; check: True = passes; mistake: True
    detail: str

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "state": self.state, "detail": self.detail}


def weights_fit_node_flip(
    weights_bytes: Quantity,
    usable_bytes_per_gpu: Quantity,
    utilization: Quantity,
    gpus_per_node: Quantity,
) -> Finding:
    name = "weights_do_not_fit_one_node"
    if not (
        weights_bytes.known
        and usable_bytes_per_gpu.known
        and utilization.known
        and gpus_per_node.known
    ):
        return Finding(name, None, "needs weights, usable memory and GPUs per node")
    node = (
        float(usable_bytes_per_gpu.value or 0)
        * float(utilization.value or 0)
        * float(gpus_per_node.value or 0)
    )
    w = float(weights_bytes.value or 0)
    g = int(gpus_per_node.value or 0)
    if w > node:
        return Finding(
            name,
            True,
            f"weights {bytes_text(w)} exceed one node of {g} GPUs "
            f"({bytes_text(node)} at gpu_memory_utilization): pipeline across nodes",
        )
    return Finding(
        name,
        False,
        f"weights {bytes_text(w)} fit one node of {g} GPUs ({bytes_text(node)}), before KV",
    )


def kv_p99_flip(kv_per_request_p99: Quantity, pool: Quantity) -> Finding:
    name = "p99_request_kv_above_pool_fraction"
    limit = KV_P99_REQUEST_MAX_FRACTION_OF_POOL
    if not (kv_per_request_p99.known and pool.known) or float(pool.value or 0) <= 0:
        return Finding(name, None, "needs p99 lengths and a positive KV pool")
    share = float(kv_per_request_p99.value or 0) / float(pool.value or 1)
    flipped = share > limit
    return Finding(
        name,
        flipped,
        f"one p99 request takes {share:.1%} of the KV pool "
        f"(threshold {limit:.0%}){': raise TP, use fp8 KV or cap context' if flipped else ''}",
    )


def prefill_split_flip(prefill_seconds: Quantity, decode_seconds: Quantity) -> Finding:
    name = "prefill_share_suggests_split"
    limit = PREFILL_SHARE_SPLIT_FRACTION
    if not (prefill_seconds.known and decode_seconds.known):
        return Finding(name, None, "needs measured prefill and decode seconds per request")
    p, d = float(prefill_seconds.value or 0), float(decode_seconds.value or 0)
    if p + d <= 0:
        return Finding(name, None, "prefill plus decode seconds is zero: not a service time")
    share = p / (p + d)
    flipped = share >= limit
    return Finding(
        name,
        flipped,
        f"prefill is {share:.1%} of service time (threshold "
        f"{limit:.0%}){': consider separate prefill and decode pools' if flipped else ''}",
    )


def doubling_context_check(per_token: float, lengths: Sequence[RequestLengths]) -> Finding:
    name = "doubling_context_doubles_kv_per_request"
    sample = next((x for x in lengths if x.total_tokens), None)
    if sample is None or per_token <= 0:
        return Finding(name, None, "no request lengths to check with")
    doubled = RequestLengths(
        sample.percentile,
        Quantity(
            sample.prompt_tokens.key,
            2 * float(sample.prompt_tokens.value or 0),
            "tokens",
            "derived",
        ),
        Quantity(
            sample.output_tokens.key,
            2 * float(sample.output_tokens.value or 0),
            "tokens",
            "derived",
        ),
    )
    base, twice = kv_bytes_per_request(per_token, sample), kv_bytes_per_request(per_token, doubled)
    ok = base is not None and twice is not None and math.isclose(twice, 2 * base)
    return Finding(name, ok, f"{sample.percentile}: {bytes_text(base)} -> {bytes_text(twice)}")


def more_replicas_check(
    total: int | None, lam: float | None, mu: float | None, rho: float | None
) -> Finding:
    """Capacity R x mu_good grows with R, and N+1 utilisation falls with R."""
    name = "more_replicas_never_lower_capacity"
    if total is None or not (lam and mu and rho):
        return Finding(name, None, "needs a replica requirement")
    counts = range(max(total - 1, 1), total + 4)
    capacity = [r * mu for r in counts]
    utilisation = [n_plus_one(r, 1, lam, mu, rho).utilisation_fraction for r in counts]
    known = [u for u in utilisation if u is not None]
    ok = all(a < b for a, b in zip(capacity, capacity[1:], strict=False)) and all(
        a > b for a, b in zip(known, known[1:], strict=False)
    )
    ok = ok and steady_unrounded(lam, mu, rho) <= total
    return Finding(
        name,
        ok,
        f"capacity over R={counts.start}..{counts.stop - 1} rises and N+1 utilisation falls",
    )


def mistakes(
    *,
    lambda_peak: Quantity,
    concurrency: Quantity,
    usable_bytes_per_gpu: Quantity,
    failure_reserve: Quantity,
    missing_metrics: Sequence[str],
) -> tuple[Finding, ...]:
    found: list[Finding] = []
    if lambda_peak.known and concurrency.known and float(concurrency.value or 0) > 0:
        lam, conc = float(lambda_peak.value or 0), float(concurrency.value or 0)
        if abs(lam - conc) <= CONCURRENCY_MATCH_RELATIVE * conc:
            found.append(
                Finding(
                    "concurrent_users_as_arrival_rate",
                    True,
                    f"lambda_peak {lam:g}/s equals the measured concurrency "
                    f"{conc:g} requests: concurrency is L = lambda x W, not lambda",
                )
            )
    flag = nameplate_memory_flag(usable_bytes_per_gpu.value)
    if flag:
        found.append(Finding("nameplate_memory_as_usable", True, flag))
    if failure_reserve.known and float(failure_reserve.value or 0) == 0:
        found.append(
            Finding(
                "no_failure_reserve",
                True,
                "failure reserve is 0: one lost replica at peak is uncovered",
            )
        )
    elif not failure_reserve.known:
        found.append(Finding("no_failure_reserve", True, "failure reserve not given"))
    for metric in missing_metrics:
        found.append(
            Finding(
                "input_metric_not_exposed",
                True,
                f"the fleet does not expose {metric}: its input needs measurement",
            )
        )
    return tuple(found)
