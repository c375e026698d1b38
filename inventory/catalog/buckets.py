"""vLLM's histogram bucket edges (reference table A.3 and section 6), and what a scrape's
edges tell: a bound on max_model_len and the bucket generation.

The current sets date from the 2025-04-07 widening (#15202); before it TTFT
stopped at 10 s, TPOT at 2.5 s and the request-latency sets at 60 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from inventory.catalog.families import FamilyLike

BucketGeneration = Literal["post-2025-04-07", "pre-2025-04-07", "mixed", "unknown"]

B_TTFT: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75)
B_TTFT += (1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
B_TOK: tuple[float, ...] = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0)
B_TOK += (2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
B_REQ: tuple[float, ...] = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0)
B_REQ += (50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
B_ITER: tuple[float, ...] = (1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0)
B_ITER += (4096.0, 8192.0, 16384.0)
B_N = (1.0, 2.0, 5.0, 10.0, 20.0)

LAST_EDGE_BEFORE_2025_04_07 = {"ttft": 10.0, "token_gap": 2.5, "request": 60.0}


def one_two_five(limit: float) -> tuple[int, ...]:
    """1, 2, 5, 10, 20, 50, … up to and including `limit`: the token-count buckets."""
    values: list[int] = []
    scale = 1
    while scale <= limit:
        values += [m * scale for m in (1, 2, 5) if m * scale <= limit]
        scale *= 10
    return tuple(values)


def next_one_two_five(value: float) -> int:
    """The first 1-2-5 value above `value`."""
    scale = 1
    while True:
        for m in (1, 2, 5):
            if m * scale > value:
                return m * scale
        scale *= 10


# (family, current edges, last edge before 2025-04-07)
_BUCKET_PROBES: tuple[tuple[str, tuple[float, ...], float], ...] = (
    ("vllm:time_to_first_token_seconds", B_TTFT, LAST_EDGE_BEFORE_2025_04_07["ttft"]),
    ("vllm:inter_token_latency_seconds", B_TOK, LAST_EDGE_BEFORE_2025_04_07["token_gap"]),
    ("vllm:time_per_output_token_seconds", B_TOK, LAST_EDGE_BEFORE_2025_04_07["token_gap"]),
    ("vllm:request_time_per_output_token_seconds", B_TOK, LAST_EDGE_BEFORE_2025_04_07["token_gap"]),
    ("vllm:e2e_request_latency_seconds", B_REQ, LAST_EDGE_BEFORE_2025_04_07["request"]),
)
# Histograms bucketed 1, 2, 5, 10, … while the edge is <= max_model_len (table A.3).
TOKEN_COUNT_HISTOGRAMS = (
    "vllm:request_prompt_tokens",
    "vllm:request_generation_tokens",
    "vllm:request_max_num_generation_tokens",
    "vllm:request_params_max_tokens",
    "vllm:request_prefill_kv_computed_tokens",
)


@dataclass(frozen=True, slots=True)
class MaxModelLen:
    """A bound, never the value: max_model_len is in [at_least, below)."""

    at_least: int | None
    below: int | None
    source: str | None
    message: str


@dataclass(frozen=True, slots=True)
class BucketSet:
    generation: BucketGeneration
    evidence: tuple[str, ...]


def _bucket_edges(family: FamilyLike) -> tuple[float, ...]:
    bucket = family.name + "_bucket"
    edges: set[float] = set()
    for sample in family.samples:
        if sample.name != bucket or "le" not in sample.labels:
            continue
        try:
            edge = float(sample.labels["le"])
        except ValueError:
            continue
        if math.isfinite(edge):
            edges.add(edge)
    return tuple(sorted(edges))


def _histograms(families: Sequence[FamilyLike]) -> dict[str, tuple[float, ...]]:
    return {f.name: _bucket_edges(f) for f in families if f.type == "histogram"}


def infer_max_model_len(families: Sequence[FamilyLike]) -> MaxModelLen:
    """Bound max_model_len from the last edge of a 1-2-5 token-count histogram.

    vLLM adds edges while they are <= max_model_len, so the last edge L gives
    L <= max_model_len < next(L). The exact value is not exposed anywhere.
    """
    histograms = _histograms(families)
    for name in TOKEN_COUNT_HISTOGRAMS:
        edges = histograms.get(name)
        if not edges or edges != tuple(float(v) for v in one_two_five(edges[-1])):
            continue
        last = int(edges[-1])
        below = next_one_two_five(last)
        message = (
            f"max_model_len is at least {last} and below {below} "
            f"(last 1-2-5 bucket edge of {name}); vLLM does not expose the exact value"
        )
        return MaxModelLen(last, below, name, message)
    return MaxModelLen(None, None, None, "no 1-2-5 token-count histogram with buckets to read")


def infer_bucket_generation(families: Sequence[FamilyLike]) -> BucketSet:
    """Whether latency buckets predate the 2025-04-07 widening (#15202), from their last edges."""
    histograms = _histograms(families)
    votes: set[BucketGeneration] = set()
    evidence: list[str] = []
    for name, current, old_last in _BUCKET_PROBES:
        edges = histograms.get(name)
        if not edges:
            continue
        if edges == current:
            votes.add("post-2025-04-07")
            evidence.append(f"{name}: the current bucket set")
        elif edges[-1] > old_last:
            votes.add("post-2025-04-07")
            evidence.append(f"{name}: edges reach {edges[-1]:g} s, past the old {old_last:g} s")
        elif edges[-1] == old_last:
            votes.add("pre-2025-04-07")
            evidence.append(f"{name}: edges stop at {old_last:g} s, the pre-2025-04-07 set")
        else:
            evidence.append(f"{name}: unrecognised edges ending at {edges[-1]:g} s")
        if name == "vllm:e2e_request_latency_seconds" and edges[0] == 1.0:
            evidence.append(f"{name}: starts at 1 s, the V0 <= 0.6.3 set")
    if len(votes) == 1:
        return BucketSet(votes.pop(), tuple(evidence))
    if votes:
        return BucketSet("mixed", tuple(evidence))
    return BucketSet("unknown", tuple(evidence) or ("no latency histogram with buckets",))
