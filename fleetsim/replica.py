"""One vLLM server: its API server front end (tokenization queue, HTTP accounting,
process) and one engine per data-parallel rank. It can crash and restart."""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush

from fleetsim.config import ReplicaConfig
from fleetsim.engine import Engine
from fleetsim.request import DONE, Request
from fleetsim.stats import (
    CURRENT_REASONS,
    V1_REASONS,
    EngineStats,
    HttpStats,
    ProcessStats,
    bucket_set,
)

# API-server CPU per request: parsing and chat template, then tokenization per
# prompt token; per output token: detokenization, plus an SSE chunk when streaming.
FRONTEND_BASE_S = 0.8e-3
FRONTEND_PER_TOKEN_S = 2.5e-6
DETOKENIZE_PER_TOKEN_S = 12e-6
STREAM_CHUNK_S = 25e-6
BYTES_PER_TOKEN = 4
IDLE_CPU_SHARE = 0.004  # event loop, health checks and metrics requests

Outcome = Callable[[Request, float, str], None]


class Replica:
    def __init__(
        self, cfg: ReplicaConfig, unix: Callable[[float], float], on_done: Outcome
    ) -> None:
        self.cfg = cfg
        self.index = cfg.index
        self.dialect = cfg.dialect
        self.unix = unix
        self.on_done = on_done
        self.up = False
        self.started_at = 0.0
        self.engines: list[Engine] = []
        self.pending: list[tuple[float, int, Request]] = []
        self.api_free: list[float] = []
        self.http = HttpStats(0.0)
        self.process = ProcessStats(0.0)
        self.lora_seen: dict[tuple[str, str, str], float] = {}  # adapter mix -> last seen
        # Scenario knobs survive restarts (they describe the machine, not the process).
        self.frontend_slowdown = 1.0
        self.clock_factor = 1.0
        self.mem_factor = 1.0
        self.link_factor = 1.0
        self.link_ranks: tuple[int, ...] | None = None  # the TP groups link_factor applies to
        # Engine limits set at startup (--max-num-seqs, --max-num-batched-tokens); None keeps
        # the deployment's. A restart with new flags keeps them, as the new flags persist.
        self.max_num_seqs: int | None = None
        self.max_num_batched_tokens: int | None = None
        # Share of golden-set items this replica's model artifact answers correctly (None:
        # the model's own quality); a bad artifact answers fewer.
        self.answer_quality: float | None = None
        # GPU activity of processes that already exited, so DCGM counters stay monotonic.
        self.past_activity = [[0.0] * 5 for _ in range(cfg.dp)]

    @property
    def multiprocess(self) -> bool:
        """`--data-parallel-size N` puts /metrics into prometheus_client's multiprocess mode."""
        return self.cfg.dp > 1

    def start(self, t: float, dialect: str | None = None) -> None:
        if dialect:
            self.dialect = dialect
        cfg = self.cfg
        created = self.unix(t)
        reasons: tuple[str, ...] = CURRENT_REASONS if self.dialect == "current" else V1_REASONS
        if self.dialect == "v0":
            reasons = ()  # V0 created finish-reason children only when one occurred
        buckets = bucket_set(self.dialect, cfg.max_model_len, cfg.deployment.max_num_seqs)
        self.engines = []
        for rank in range(cfg.dp):
            engine = Engine(cfg, rank, EngineStats(buckets, reasons, created), t, self._finished)
            self._apply_knobs(engine)
            self.engines.append(engine)
        self.api_free = [t] * cfg.dp  # internal load balancing runs one API server per rank
        self.http = HttpStats(created)
        self.process = ProcessStats(created)
        self.lora_seen = {}
        self.started_at = t
        self.up = True

    def crash(self) -> list[Request]:
        """Stop serving; returns the requests that were in flight (their clients get errors)."""
        lost = [r for _, _, r in self.pending]
        for engine, past in zip(self.engines, self.past_activity, strict=True):
            for i, value in enumerate(self.activity_of(engine)):
                past[i] += value
            lost += engine.in_flight()
        self.pending = []
        self.engines = []
        self.up = False
        for req in lost:
            req.state = DONE
        return lost

    def set_knobs(self, **knobs: float | int | tuple[int, ...] | None) -> None:
        for name, value in knobs.items():
            setattr(self, name, value)
        for engine in self.engines:
            self._apply_knobs(engine)

    def _apply_knobs(self, engine: Engine) -> None:
        engine.step.clock_factor = self.clock_factor
        engine.step.mem_factor = self.mem_factor
        degraded = self.link_ranks is None or engine.rank in self.link_ranks
        engine.step.link_factor = self.link_factor if degraded else 1.0
        dep = self.cfg.deployment
        engine.max_seqs = self.max_num_seqs or dep.max_num_seqs
        engine.budget = self.max_num_batched_tokens or dep.max_num_batched_tokens

    @staticmethod
    def activity_of(engine: Engine) -> tuple[float, float, float, float, float]:
        return engine.busy_s, engine.gpu_s, engine.flops, engine.hbm_bytes, engine.link_bytes

    def activity(self, rank: int) -> list[float]:
        """Cumulative (busy s, GPU-busy s, FLOPs/GPU, HBM bytes/GPU, link bytes/GPU) of a rank."""
        past = self.past_activity[rank]
        if not self.engines:
            return list(past)
        now = self.activity_of(self.engines[rank])
        return [a + b for a, b in zip(past, now, strict=True)]

    def submit(self, req: Request) -> None:
        req.replica = self.index
        heappush(self.pending, (req.t_arrival, req.rid, req))

    def advance_to(self, t_end: float) -> None:
        if not self.up:
            return
        pending, cfg = self.pending, self.cfg
        max_len = cfg.max_model_len
        while pending and pending[0][0] < t_end:
            req = heappop(pending)[2]
            server = min(range(len(self.api_free)), key=self.api_free.__getitem__)
            service = (FRONTEND_BASE_S + FRONTEND_PER_TOKEN_S * req.prompt_len) * (
                self.frontend_slowdown
            )
            done = max(req.t_arrival, self.api_free[server]) + service
            self.api_free[server] = done
            self.process.cpu_seconds += service
            too_long = req.prompt_len >= max_len or (
                req.max_tokens is not None and req.prompt_len + req.max_tokens > max_len
            )
            unknown_adapter = req.lora is not None and not cfg.deployment.enable_lora
            if too_long or unknown_adapter:
                # vLLM answers 400 (or 404 for a model it does not serve) before the engine.
                req.state, req.finish_reason, req.t_finish = DONE, "rejected", done
                size = BYTES_PER_TOKEN * req.prompt_len + 350
                self.http.record(req.handler, "4xx", done - req.t_arrival, size, 220)
                self.on_done(req, done, "rejected")
                continue
            req.plan(max_len)
            req.t_engine = done
            engine = self.engines[0]
            if len(self.engines) > 1:
                engine = min(self.engines, key=Engine.load)
            engine.submit(req)
        for engine in self.engines:
            engine.advance_to(t_end)

    def load(self) -> float:
        return sum(e.n_running + e.n_waiting + len(e.inbox) for e in self.engines)

    def cpu_seconds(self, t: float) -> float:
        return self.process.cpu_seconds + IDLE_CPU_SHARE * max(0.0, t - self.started_at)

    def _finished(self, req: Request, t: float) -> None:
        proc = self.process
        proc.finished += 1
        per_token = DETOKENIZE_PER_TOKEN_S + (STREAM_CHUNK_S if req.stream else 0.0)
        proc.cpu_seconds += per_token * req.generated
        if req.stream:
            proc.tokens_streamed += req.generated
        # The instrumentator reads Content-Length, which streamed responses don't have.
        resp = 0 if req.stream else BYTES_PER_TOKEN * req.generated + 420
        size = BYTES_PER_TOKEN * req.prompt_len + 350
        self.http.record(req.handler, "2xx", t - req.t_arrival, size, resp)
        self.on_done(req, t, "ok")
