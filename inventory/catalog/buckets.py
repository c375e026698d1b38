"""Catalog data: vLLM's histogram bucket edges (reference table A.3 and section 6).

The current sets date from the 2025-04-07 widening (#15202); before it TTFT
stopped at 10 s, TPOT at 2.5 s and the request-latency sets at 60 s.
"""

from __future__ import annotations

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
