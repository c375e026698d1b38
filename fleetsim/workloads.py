"""Who sends what: workloads, tenants, the diurnal curve, bursts and arrival streams."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import count
from typing import Any

from fleetsim.request import DONE, Request

CHAT_HANDLER = "/v1/chat/completions"
COMPLETIONS_HANDLER = "/v1/completions"
SEGMENT_S = 15.0  # arrival rates are piecewise constant over segments this long
MIN_THINK_S = 1.0  # agents never answer faster than this; the fleet relies on it
RETRY_BACKOFF_S = 2.0  # clients retry 5xx and refused connections, doubling the wait
MAX_ATTEMPTS = 3  # the OpenAI SDK's default: two retries
MAX_ATTEMPTS_AGENT = 6  # agent frameworks keep retrying for about a minute


@dataclass(frozen=True, slots=True)
class Dist:
    """A clipped log-normal token count."""

    median: float
    sigma: float
    lo: int
    hi: int

    def draw(self, rng: random.Random) -> int:
        return int(
            min(max(rng.lognormvariate(math.log(self.median), self.sigma), self.lo), self.hi)
        )

    @property
    def mean(self) -> float:
        return min(self.median * math.exp(self.sigma**2 / 2), float(self.hi))


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    handler: str
    stream: bool
    system_tokens: int  # the shared system prompt: what the prefix cache can reuse
    prompt: Dist
    output: Dist
    max_tokens: int
    max_tokens_share: float  # share of requests that set max_tokens
    abort_share: float  # clients that disconnect mid-stream
    timeout_s: float  # clients give up if nothing arrives by then
    burst_every_s: float
    burst_mult: tuple[float, float]
    turns_mean: float = 0.0  # > 0: multi-turn sessions (agent/tool loops)
    tool_result: Dist | None = None
    think: Dist | None = None

    @property
    def mean_prompt(self) -> float:
        base = self.system_tokens + self.prompt.mean
        if self.turns_mean and self.tool_result:
            grow = self.output.mean + self.tool_result.mean
            return base + grow * (self.turns_mean - 1) / 2
        return base


WORKLOADS: dict[str, Workload] = {
    "chat": Workload(
        "chat", CHAT_HANDLER, True, 700, Dist(300, 1.0, 8, 8000), Dist(200, 0.9, 4, 4096),
        1024, 0.35, 0.02, 60.0, 2400.0, (1.4, 2.2),
    ),
    "rag": Workload(
        "rag", CHAT_HANDLER, True, 350, Dist(4500, 0.55, 200, 28000), Dist(260, 0.6, 16, 2048),
        1024, 0.8, 0.01, 120.0, 3600.0, (1.3, 1.8),
    ),
    "agent": Workload(
        "agent", CHAT_HANDLER, False, 1800, Dist(350, 0.8, 16, 4000), Dist(120, 0.8, 8, 1500),
        2048, 1.0, 0.0, 180.0, 3000.0, (1.3, 2.0),
        turns_mean=6.0, tool_result=Dist(600, 0.9, 20, 6000), think=Dist(2.5, 0.7, 1, 60),
    ),
    "batch": Workload(
        "batch", COMPLETIONS_HANDLER, False, 250, Dist(900, 0.7, 32, 12000),
        Dist(450, 0.7, 16, 4096), 4096, 1.0, 0.0, 600.0, 1200.0, (2.0, 4.0),
    ),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Demand:
    """One tenant's share of a model's offered load, for one workload."""

    tenant: str
    model: str
    workload: str
    share: float
    adapters: tuple[str, ...] = ()
    adapter_share: float = 0.0


DEMANDS: tuple[Demand, ...] = (
    Demand("acme", "llama-3.1-8b-instruct", "chat", 0.35,
           ("acme-support-v3", "acme-legal-v1"), 0.4),
    Demand("acme", "llama-3.1-8b-instruct", "agent", 0.10),
    Demand("initech", "llama-3.1-8b-instruct", "agent", 0.25),
    Demand("umbrella", "llama-3.1-8b-instruct", "batch", 0.15),
    Demand("hooli", "llama-3.1-8b-instruct", "chat", 0.15),
    Demand("globex", "llama-3.1-70b-instruct", "rag", 0.45),
    Demand("globex", "llama-3.1-70b-instruct", "chat", 0.10),
    Demand("hooli", "llama-3.1-70b-instruct", "chat", 0.35),
    Demand("initech", "llama-3.1-70b-instruct", "agent", 0.10),
    Demand("umbrella", "qwen2.5-7b-instruct", "batch", 0.45),
    Demand("umbrella", "qwen2.5-7b-instruct", "chat", 0.15),
    Demand("hooli", "qwen2.5-7b-instruct", "chat", 0.40),
)  # fmt: skip


def diurnal(unix_time: float) -> float:
    """Traffic relative to the daily mean: peak mid-afternoon UTC, trough before dawn."""
    hour = (unix_time % 86400.0) / 3600.0
    return 1.0 + 0.35 * math.sin(2 * math.pi * (hour - 9.0) / 24.0)


@dataclass(slots=True)
class Session:
    key: str
    turns_left: int
    context: int  # tokens of the conversation so far
    replica: int  # sticky routing: the replica that holds this session's KV
    origin: Stream  # the stream that generates its next turns


class Stream:
    """Open-loop Poisson arrivals for one (tenant, model, workload), with bursts.

    Each stream has its own random generator, so adding a scenario's streams
    leaves the baseline traffic untouched.
    """

    def __init__(
        self,
        demand: Demand,
        workload: Workload,
        base_rate: float,
        *,
        seed: str,
        epoch: float,
        ids: count,
        window: tuple[float, float] | None = None,
        pinned: tuple[int, ...] | None = None,
        bursts: bool = True,
        follow_diurnal: bool = True,
    ) -> None:
        self.demand = demand
        self.workload = workload
        self.base_rate = base_rate
        self.epoch = epoch
        self.window = window
        self.pinned = pinned
        self._ids = ids
        self._rng = random.Random(f"stream:{seed}")
        self._burst_rng = random.Random(f"burst:{seed}")
        self._bursts: list[tuple[float, float, float]] = []
        self._burst_horizon = 0.0 if bursts else math.inf
        self._cursor = 0.0
        self._next: float | None = None
        self.rate_scale = 1.0  # scenarios multiply traffic through this
        self.follow_diurnal = follow_diurnal  # scenario traffic is sized for its own window
        # A client retry policy scenarios may change: (attempts, fixed backoff s), or None
        # for the SDK default below.
        self.retry_policy: tuple[int, float] | None = None
        self.sessions_started = 0

    def rate_at(self, t: float) -> float:
        if self.window and not (self.window[0] <= t < self.window[1]):
            return 0.0
        daily = diurnal(self.epoch + t) if self.follow_diurnal else 1.0
        return self.base_rate * self.rate_scale * daily * self._burst(t)

    def arrivals_until(self, t_end: float) -> Iterator[Request]:
        while True:
            if self._next is None:
                self._next = self._draw_next()
            if self._next >= t_end:
                return
            t, self._next = self._next, None
            yield self._make(t)

    def next_turn(self, req: Request, t_done: float, max_model_len: int) -> Request | None:
        """The agent's next turn after a tool call, or None when the session is over."""
        session = req.session
        if session is None or session.turns_left <= 0 or req.state != DONE:
            return None
        if req.finish_reason not in ("stop", "length"):
            return None
        wl, rng = self.workload, self._rng
        assert wl.tool_result is not None and wl.think is not None
        prompt = session.context + req.generated + wl.tool_result.draw(rng)
        if prompt + wl.max_tokens > max_model_len:
            return None  # agent frameworks start over rather than overflow the context
        think = max(MIN_THINK_S, rng.lognormvariate(math.log(wl.think.median), wl.think.sigma))
        # The previous turn's whole context is what the engine cached for this session.
        cached = session.context + req.generated
        nxt = self._request(t_done + think, prompt, f"{session.key}:{req.turn}", cached)
        session.turns_left -= 1
        session.context = prompt
        nxt.session, nxt.turn = session, req.turn + 1
        return nxt

    def follow_up(self, req: Request, t_done: float) -> Request | None:
        """The request an open-loop client sends because `req` ended: none (closed-loop
        clients, which keep a number of requests in flight, override this)."""
        return None

    def retry(self, req: Request, t_failed: float) -> Request | None:
        """The client's next attempt after a 5xx or a refused connection, or None."""
        limit = MAX_ATTEMPTS_AGENT if req.session is not None else MAX_ATTEMPTS
        backoff = RETRY_BACKOFF_S * 2**req.attempt
        if self.retry_policy is not None:
            limit, backoff = self.retry_policy
        if req.attempt + 1 >= limit:
            return None
        backoff = max(MIN_THINK_S, backoff)
        again = Request(
            next(self._ids), req.tenant, req.workload, req.model, req.handler, req.stream,
            req.prompt_len, req.natural_len, req.max_tokens, req.abort_after, req.timeout,
            req.prefix_key, req.prefix_len, t_failed + backoff, self._rng.random(),
        )  # fmt: skip
        again.session, again.turn, again.lora = req.session, req.turn, req.lora
        again.origin, again.attempt = self, req.attempt + 1
        return again

    def _draw_next(self) -> float:
        t = self._cursor
        while True:
            if self.window:
                if t >= self.window[1]:
                    return math.inf
                t = max(t, self.window[0])
            seg_end = (math.floor(t / SEGMENT_S) + 1) * SEGMENT_S
            rate = self.rate_at(t)
            if rate > 0:
                gap = self._rng.expovariate(rate)
                if t + gap < seg_end:
                    self._cursor = t + gap
                    return self._cursor
            t = seg_end

    def _make(self, t: float) -> Request:
        wl, rng = self.workload, self._rng
        prompt = wl.system_tokens + wl.prompt.draw(rng)
        lora = None
        if self.demand.adapters and rng.random() < self.demand.adapter_share:
            lora = rng.choice(self.demand.adapters)
        key = f"sys:{self.demand.tenant}:{wl.name}:{lora or ''}"
        req = self._request(t, prompt, key, wl.system_tokens)
        req.lora = lora
        if wl.turns_mean:
            self.sessions_started += 1
            turns = 1
            while rng.random() > 1.0 / wl.turns_mean and turns < 40:
                turns += 1
            sid = f"{self.demand.tenant}:{wl.name}:{self.sessions_started}:{req.rid}"
            req.session = Session(sid, turns - 1, prompt, -1, self)
            req.turn = 1
        return req

    def _request(self, t: float, prompt: int, prefix_key: str, prefix_len: int) -> Request:
        wl, rng = self.workload, self._rng
        natural = wl.output.draw(rng)
        max_tokens = wl.max_tokens if rng.random() < wl.max_tokens_share else None
        abort_after = None
        if wl.abort_share and rng.random() < wl.abort_share:
            abort_after = rng.randint(1, natural)
        req = Request(
            next(self._ids),
            self.demand.tenant,
            wl.name,
            self.demand.model,
            wl.handler,
            wl.stream,
            prompt,
            natural,
            max_tokens,
            abort_after,
            wl.timeout_s,
            prefix_key,
            prefix_len,
            t,
            rng.random(),
        )
        req.origin = self
        return req

    def _burst(self, t: float) -> float:
        while self._burst_horizon <= t:
            wl, rng = self.workload, self._burst_rng
            start = self._burst_horizon + rng.expovariate(1.0 / wl.burst_every_s)
            length = rng.uniform(60.0, 300.0)
            self._bursts.append((start, start + length, rng.uniform(*wl.burst_mult)))
            self._burst_horizon = start + length
        while self._bursts and self._bursts[0][1] <= t:
            self._bursts.pop(0)
        for start, end, mult in self._bursts:
            if start <= t < end:
                return mult
        return 1.0


def variant(workload: Workload, **changes: Any) -> Workload:
    """A workload with some fields changed (scenarios use this for surges)."""
    return replace(workload, **changes)
