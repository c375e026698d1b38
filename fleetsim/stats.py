"""What an engine and an API server count, accumulated from simulated requests and steps."""

from __future__ import annotations

from dataclasses import dataclass

from fleetsim.hardware import buckets_125
from fleetsim.histogram import (
    B_HTTP,
    B_HTTP_HIGHR,
    B_ITER,
    B_ITER_V0,
    B_N,
    B_REQ,
    B_REQ_OLD,
    B_TOK,
    B_TOK_OLD,
    B_TTFT,
    B_TTFT_OLD,
    Hist,
    capture_sizes,
)

V1_REASONS = ("stop", "length", "abort")
CURRENT_REASONS = ("stop", "length", "abort", "error", "repetition")


@dataclass(frozen=True, slots=True)
class BucketSet:
    ttft: list[float]
    tok: list[float]
    req: list[float]
    tokens: list[float]
    iteration: list[float]


def bucket_set(dialect: str, max_model_len: int, max_num_seqs: int) -> BucketSet:
    tokens = buckets_125(max_model_len)
    if dialect in ("current", "v1-0.10"):
        return BucketSet(B_TTFT, B_TOK, B_REQ, tokens, B_ITER)
    if dialect == "v1-0.8":
        return BucketSet(B_TTFT_OLD, B_TOK_OLD, B_REQ_OLD, tokens, capture_sizes(max_num_seqs))
    return BucketSet(B_TTFT_OLD, B_TOK_OLD, B_REQ_OLD, tokens, B_ITER_V0)


class EngineStats:
    """Counters and histograms of one engine (one `engine` label value)."""

    __slots__ = (
        "created", "prefix_queries", "prefix_hits", "prefix_queries_blocks",
        "prefix_hits_blocks", "preemptions", "prompt_tokens", "prompt_computed",
        "prompt_cached", "gen_tokens", "success", "ttft", "itl", "tpot", "e2e", "queue",
        "prefill", "decode", "inference", "prompt_len", "gen_len", "max_gen", "max_tokens",
        "n", "kv_computed", "iter_tokens", "rows",
    )  # fmt: skip

    def __init__(self, buckets: BucketSet, reasons: tuple[str, ...], created: float) -> None:
        self.created = created  # unix time the counters were registered (`_created`)
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.prefix_queries_blocks = 0
        self.prefix_hits_blocks = 0
        self.preemptions = 0
        self.prompt_tokens = 0
        self.prompt_computed = 0
        self.prompt_cached = 0
        self.gen_tokens = 0
        self.success: dict[str, int] = dict.fromkeys(reasons, 0)
        self.ttft = Hist(buckets.ttft)
        self.itl = Hist(buckets.tok)
        self.tpot = Hist(buckets.tok)
        self.e2e = Hist(buckets.req)
        self.queue = Hist(buckets.req)
        self.prefill = Hist(buckets.req)
        self.decode = Hist(buckets.req)
        self.inference = Hist(buckets.req)
        self.prompt_len = Hist(buckets.tokens)
        self.gen_len = Hist(buckets.tokens)
        self.max_gen = Hist(buckets.tokens)
        self.max_tokens = Hist(buckets.tokens)
        self.n = Hist(B_N)
        self.kv_computed = Hist(buckets.tokens)
        self.iter_tokens = Hist(buckets.iteration)
        # Finished requests not yet folded into the per-request histograms (see `flush`).
        self.rows: list[tuple[float | None, ...]] = []

    def finished(self, row: tuple[float | None, ...]) -> None:
        """Record a finished request: (e2e, queue, prefill, decode, inference, tpot,
        kv computed, prompt tokens, generated tokens, max_tokens); None where it has no value."""
        self.rows.append(row)

    def flush(self) -> None:
        """Fold finished requests into their histograms; readers call this first."""
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        columns = list(zip(*rows, strict=True))
        hists = (self.e2e, self.queue, self.prefill, self.decode, self.inference, self.tpot,
                 self.kv_computed, self.prompt_len, self.gen_len, self.max_tokens)  # fmt: skip
        for hist, column in zip(hists, columns, strict=True):
            hist.observe_all(column)
        self.max_gen.observe_all(columns[8])  # n = 1: the longest sequence is the only one
        self.n.observe(1.0, len(rows))


class HttpStats:
    """prometheus-fastapi-instrumentator's families for the API server."""

    __slots__ = ("created", "requests", "req_size", "resp_size", "highr", "duration")

    def __init__(self, created: float) -> None:
        self.created = created
        self.requests: dict[tuple[str, str, str], int] = {}  # (handler, method, status)
        self.req_size: dict[str, list[float]] = {}  # handler -> [count, sum]
        self.resp_size: dict[str, list[float]] = {}
        self.highr = Hist(B_HTTP_HIGHR)
        self.duration: dict[tuple[str, str], Hist] = {}  # (handler, method)

    def record(
        self, handler: str, status: str, duration: float, req_bytes: int, resp_bytes: int
    ) -> None:
        key = (handler, "POST", status)
        self.requests[key] = self.requests.get(key, 0) + 1
        for table, size in ((self.req_size, req_bytes), (self.resp_size, resp_bytes)):
            acc = table.setdefault(handler, [0.0, 0.0])
            acc[0] += 1
            acc[1] += size
        self.highr.observe(duration)
        hist = self.duration.get((handler, "POST"))
        if hist is None:
            hist = self.duration[(handler, "POST")] = Hist(B_HTTP)
        hist.observe(duration)


class ProcessStats:
    """The API server process as prometheus_client's default collectors report it."""

    __slots__ = ("start", "cpu_seconds", "finished", "tokens_streamed")

    def __init__(self, start: float) -> None:
        self.start = start
        self.cpu_seconds = 0.0
        self.finished = 0
        self.tokens_streamed = 0
