"""Histogram accumulators and the bucket sets vLLM uses (reference section 3 and 6)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from math import floor

B_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0]
B_TTFT += [7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
B_TOK = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5]
B_TOK += [10.0, 20.0, 40.0, 80.0]
B_REQ = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0]
B_REQ += [120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
B_ITER = [1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0]
B_ITER += [16384.0]
B_N = [1.0, 2.0, 5.0, 10.0, 20.0]

# Before vLLM #15202 (2025-04-07): TTFT stopped at 10 s, TPOT at 2.5 s, request
# latencies at 60 s (the 0.3..60 set in use since 2024-11-12).
B_TTFT_OLD = [b for b in B_TTFT if b <= 10.0]
B_TOK_OLD = [b for b in B_TOK if b <= 2.5]
B_REQ_OLD = [b for b in B_REQ if b <= 60.0]
# V0's per-step token histogram; V1 copied it before the 2025-04-28 fix (8096 is
# vLLM's own typo). Not pinned by the reference: see fleetsim/README.md.
B_ITER_V0 = [1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8096.0]

# Gateway request-duration buckets: FleetScope's convention reuses vLLM's sets so
# per-tenant and per-replica SLO thresholds fall on the same edges.
B_HTTP_HIGHR = [0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
B_HTTP_HIGHR += [4.0, 4.5, 5.0, 7.5, 10.0, 30.0, 60.0]
B_HTTP = [0.1, 0.5, 1.0]


def capture_sizes(max_num_seqs: int) -> list[float]:
    """CUDA-graph capture sizes, the buckets of early V1's `iteration_tokens_total`."""
    sizes = [1, 2, 4] + list(range(8, 513, 8))
    return [float(s) for s in sizes if s <= max_num_seqs]


class Hist:
    """Non-cumulative bucket counts plus sum and count; `le` semantics (value <= edge)."""

    __slots__ = ("edges", "counts", "sum", "count")

    def __init__(self, edges: list[float]) -> None:
        self.edges = edges
        self.counts = [0] * (len(edges) + 1)  # the last slot is the +Inf overflow
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float, n: int = 1) -> None:
        self.counts[bisect_left(self.edges, value)] += n
        self.sum += value * n
        self.count += n

    def observe_all(self, values: Iterable[float | None]) -> None:
        """Observe every value (None skipped): the batch path for finished requests."""
        counts, edges, find = self.counts, self.edges, bisect_left
        n, total = 0, 0.0
        for value in values:
            if value is not None:
                counts[find(edges, value)] += 1
                total += value
                n += 1
        self.sum += total
        self.count += n

    def observe_linear(self, first: float, last: float, k: int, weight: int) -> None:
        """Observe `weight` samples of each of k evenly spaced values from `first` to `last`.

        Engine steps of a stable batch grow linearly in duration as contexts grow;
        counting how many of them fall under each edge keeps the histogram exact
        however the steps are grouped.
        """
        if k <= 0 or weight <= 0:
            return
        if last < first:
            first, last = last, first
        lo = bisect_left(self.edges, first)
        hi = bisect_left(self.edges, last)
        self.sum += weight * k * (first + last) / 2.0
        self.count += weight * k
        if lo == hi or k == 1:
            self.counts[lo] += weight * k
            return
        step = (last - first) / (k - 1)
        below = 0
        for i in range(lo, hi):
            # values <= edge: first + step*j <= edge  ->  j <= (edge - first) / step
            upto = min(k, floor((self.edges[i] - first) / step) + 1)
            self.counts[i] += weight * (upto - below)
            below = upto
        self.counts[hi] += weight * (k - below)

    def cumulative(self) -> list[int]:
        out = []
        acc = 0
        for c in self.counts:
            acc += c
            out.append(acc)
        return out
