"""One vLLM engine: continuous batching with chunked prefill, a paged KV cache
with prefix caching, recompute preemption and LoRA slots.

The engine runs in *runs* of identical steps: while the batch composition is
unchanged (same decoding requests, same prefill chunk size) every step costs
the same plus a linear growth from longer contexts, so k steps are accounted at
once. A run ends at the next event: a request finishing, a prefill chunk
completing, the KV cache filling, an arrival, or the caller's time limit.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from heapq import heappop, heappush
from math import ceil

from fleetsim.config import ReplicaConfig
from fleetsim.kvcache import PrefixCache
from fleetsim.request import DECODE, DONE, PREFILL, WAITING, Request
from fleetsim.roofline import StepModel
from fleetsim.stats import EngineStats

MAX_RUN_STEPS = 2048
LORA_LOAD_FROM_CPU_S = 0.003
LORA_LOAD_FROM_DISK_S = 0.12
MAX_LORA_SCAN = 64  # waiting requests the scheduler looks past when LoRA slots are full


class Engine:
    def __init__(
        self,
        cfg: ReplicaConfig,
        rank: int,
        stats: EngineStats,
        t0: float,
        on_finish: Callable[[Request, float], None],
    ) -> None:
        dep = cfg.deployment
        self.cfg = cfg
        self.rank = rank
        self.stats = stats
        self.step = StepModel(cfg)
        self.on_finish = on_finish
        self.max_seqs = dep.max_num_seqs
        self.budget = dep.max_num_batched_tokens
        self.bs = cfg.block_size
        self.capacity = float(cfg.kv_tokens)
        self.max_loras = dep.max_loras if dep.enable_lora else 0
        self.max_cpu_loras = dep.max_cpu_loras
        self.clock = t0
        self.inbox: list[tuple[float, int, Request]] = []
        self.waiting: deque[Request] = deque()
        self.n_waiting = 0
        self.deadlines: list[tuple[float, int, Request]] = []
        self.prefilling: deque[Request] = deque()
        self.prefill_pending = 0
        self.decoding: list[tuple[int, int, int, Request]] = []
        self.n_dec = 0
        self.ctx_dec = 0.0
        self.order: list[Request] = []  # running requests by admission (finished ones linger)
        self.n_running = 0
        self.decode_steps = 0
        self.used = 0.0  # KV tokens held by running requests
        self.cache = PrefixCache()
        # Whether any request with a priority other than 0 was ever submitted: only then
        # does the scheduler look at priorities (all 0 is plain FCFS either way).
        self.deprioritized = False
        self.bumped: list[Request] = []  # preempted for a higher priority, this schedule
        self.lora_active: dict[str, int] = {}
        self.lora_cpu: OrderedDict[str, None] = OrderedDict()
        self.stall_s = 0.0  # one-off cost added to the next step (adapter loads)
        # Cumulative activity, read by the DCGM exporter.
        self.busy_s = 0.0
        self.gpu_s = 0.0
        self.flops = 0.0
        self.hbm_bytes = 0.0
        self.link_bytes = 0.0

    # -- intake -------------------------------------------------------------

    def submit(self, req: Request) -> None:
        if req.priority:
            self.deprioritized = True
        heappush(self.inbox, (req.t_engine, req.rid, req))

    def load(self) -> int:
        """What the API server's data-parallel balancer compares between engines."""
        return 4 * (self.n_waiting + len(self.inbox)) + self.n_running

    def in_flight(self) -> list[Request]:
        live = [r for r in self.order if r.state in (PREFILL, DECODE)]
        live += [r for r in self.waiting if r.state == WAITING]
        return live + [r for _, _, r in self.inbox]

    def kv_usage(self) -> float:
        blocks = self.used / self.bs + 0.5 * self.n_running  # half a block lost per sequence
        return min(1.0, blocks * self.bs / self.capacity) if self.capacity else 0.0

    def waiting_deferred(self) -> int:
        if not self.max_loras or len(self.lora_active) < self.max_loras:
            return 0
        active = self.lora_active
        return sum(
            1 for r in self.waiting if r.state == WAITING and r.lora and r.lora not in active
        )

    # -- time ---------------------------------------------------------------

    def advance_to(self, t_end: float) -> None:
        inbox = self.inbox
        while self.clock < t_end:
            clock = self.clock
            while inbox and inbox[0][0] <= clock:
                req = heappop(inbox)[2]
                req.state = WAITING
                self.waiting.append(req)
                self.n_waiting += 1
                heappush(self.deadlines, (req.t_arrival + req.timeout, req.rid, req))
            if self.n_waiting:
                self._expire()
                if self.n_waiting:
                    self._schedule()
            if self.n_running:
                self._run(t_end)
                continue
            wake = inbox[0][0] if inbox else t_end
            if self.n_waiting and self.deadlines:
                wake = min(wake, self.deadlines[0][0])
            self.clock = min(max(wake, clock), t_end)

    def _expire(self) -> None:
        deadlines, clock = self.deadlines, self.clock
        while deadlines and deadlines[0][0] <= clock:
            req = heappop(deadlines)[2]
            if req.state == WAITING and req.t_sched < 0:
                # The client gave up before its request was ever scheduled.
                req.state = DONE
                req.finish_reason = "abort"
                self.n_waiting -= 1
                self._record_finish(req, clock)

    # -- scheduling ----------------------------------------------------------

    def _schedule(self) -> None:
        room = self.budget - self.n_dec - self.prefill_pending
        waiting, cache, bs, st = self.waiting, self.cache, self.bs, self.stats
        if self.deprioritized and any(r.priority for r in waiting):
            # Priority scheduling: lower values first, FCFS within one (a stable sort keeps
            # preempted requests ahead of later arrivals of their priority).
            self.waiting = waiting = deque(sorted(waiting, key=_priority))
        skipped: list[Request] = []
        while waiting and room > 0 and self.n_running < self.max_seqs:
            req = waiting.popleft()
            if req.state != WAITING:
                continue
            lora = req.lora
            if lora and lora not in self.lora_active and len(self.lora_active) >= self.max_loras:
                skipped.append(req)  # deferred: no free LoRA slot for its adapter
                if len(skipped) >= MAX_LORA_SCAN:
                    break
                continue
            total = req.prompt_len + req.generated
            want = min(req.prefix_len, total - 1) // bs * bs
            shared = extra = 0
            hit = False
            if want > 0:
                held = cache.held(req.prefix_key)
                if held:
                    shared, hit = held, True
                else:
                    kept = cache.cached(req.prefix_key)
                    shared = extra = kept or want
                    hit = kept > 0
            private = total - shared
            need = private + extra
            if self.capacity - self.used < need + self.n_dec:
                waiting.appendleft(req)  # first come, first served: wait for space
                if self.deprioritized and self._preempt_below(req, need):
                    continue  # room made: look again (the freed blocks may hold its prefix)
                break
            own = 0
            if req.generated:
                own = min(cache.take(("p", req.rid)), private - 1)
            if want > 0:
                cache.acquire(req.prefix_key, shared)
            cached = (shared if hit else 0) + max(own, 0)
            st.prefix_queries += total
            st.prefix_hits += cached
            st.prefix_queries_blocks += total // bs
            st.prefix_hits_blocks += cached // bs
            if req.t_sched < 0:
                req.t_sched = self.clock
                req.cached_first = cached
            req.state = PREFILL
            req.shared = shared
            req.prompt_total = total
            req.remaining = total - cached
            self.used += need
            self.prefilling.append(req)
            self.prefill_pending += req.remaining
            self.n_running += 1
            self.n_waiting -= 1
            self.order.append(req)
            if len(self.order) > 2 * self.n_running + 64:
                self._compact_order()
            room -= req.remaining
            if req.lora:
                self._use_adapter(req.lora)
        if skipped:
            waiting.extendleft(reversed(skipped))
        if self.bumped:
            # Requests preempted to admit a higher-priority one go back ahead of the others
            # of their priority, behind every request of a higher one.
            bumped, self.bumped = self.bumped, []
            self.waiting = deque(sorted([*reversed(bumped), *waiting], key=_priority))
        cache.fit(self.capacity - self.used)

    def _compact_order(self) -> None:
        """Drop finished requests and stale duplicates (a resumed request is appended again)."""
        seen: set[int] = set()
        kept: list[Request] = []
        for req in reversed(self.order):
            if req.state in (PREFILL, DECODE) and req.rid not in seen:
                seen.add(req.rid)
                kept.append(req)
        kept.reverse()
        self.order = kept

    def _use_adapter(self, name: str) -> None:
        users = self.lora_active.get(name, 0)
        if users == 0:
            if name in self.lora_cpu:
                self.lora_cpu.move_to_end(name)
                self.stall_s += LORA_LOAD_FROM_CPU_S
            else:
                self.lora_cpu[name] = None
                self.stall_s += LORA_LOAD_FROM_DISK_S
                while len(self.lora_cpu) > self.max_cpu_loras:
                    self.lora_cpu.popitem(last=False)
        self.lora_active[name] = users + 1

    def _drop_adapter(self, name: str) -> None:
        users = self.lora_active[name] - 1
        if users:
            self.lora_active[name] = users
        else:
            del self.lora_active[name]

    def _preempt_for(self, tokens: float) -> None:
        """Recompute preemption: evict the newest running requests until `tokens` fit."""
        order = self.order
        while self.capacity - self.used < tokens and self.n_running > 1 and order:
            req = self._victim() if self.deprioritized else order.pop()
            if self._evict(req):
                self.waiting.appendleft(req)
        self.cache.fit(self.capacity - self.used)

    def _preempt_below(self, req: Request, need: int) -> bool:
        """Priority scheduling (vLLM's `--scheduling-policy priority`): a waiting request
        that finds no room for its KV blocks preempts running requests of a lower priority
        (a higher value; the newest of the lowest first) until it fits. Whether it
        preempted any."""
        order, evicted = self.order, False
        while self.capacity - self.used < need + self.n_dec:
            victim = None
            for i in range(len(order) - 1, -1, -1):
                run = order[i]
                if (
                    run.state in (PREFILL, DECODE)
                    and run.priority > req.priority
                    and (victim is None or run.priority > order[victim].priority)
                ):
                    victim = i
            if victim is None:
                break
            bumped = order.pop(victim)
            self._evict(bumped)
            self.bumped.append(bumped)
            evicted = True
        return evicted

    def _evict(self, req: Request) -> bool:
        """Preempt one running request (recompute): free its KV, back to waiting. Whether
        it was running (`order` keeps finished requests until compacted)."""
        st = self.stats
        if req.state == PREFILL:
            self.prefilling.remove(req)
            self.prefill_pending -= req.remaining
            ctx = req.prompt_total
            computed = ctx - req.remaining
        elif req.state == DECODE:
            ctx = req.ctx_join + (self.decode_steps - req.join_step)
            req.generated = ctx - req.prompt_len
            req.epoch += 1  # its entry in the decode heap is now stale
            self.n_dec -= 1
            self.ctx_dec -= ctx
            computed = ctx
        else:
            return False
        self.used -= ctx - req.shared
        if req.shared:
            self.used -= self.cache.release(req.prefix_key, keep=True)
        # Its computed blocks stay cached until evicted: a quick resume can reuse them.
        self.cache.put(("p", req.rid), (computed - req.shared) // self.bs * self.bs)
        if req.lora:
            self._drop_adapter(req.lora)
        req.state = WAITING
        self.n_waiting += 1
        self.n_running -= 1
        st.preemptions += 1
        return True

    def _victim(self) -> Request:
        """Priority scheduling preempts the running request of the highest priority value,
        the newest of those: with every priority 0 that is the newest, as under FCFS."""
        order = self.order
        for i in range(len(order) - 1, -1, -1):
            req = order[i]
            if req.priority and req.state in (PREFILL, DECODE):
                del order[i]
                return req
        return order.pop()

    # -- stepping ------------------------------------------------------------

    def _run(self, t_end: float) -> None:
        n_dec = self.n_dec
        if n_dec and self.capacity - self.used < n_dec:
            self._preempt_for(n_dec)
            n_dec = self.n_dec
        prefill, head_only, pos = 0, False, 0.0
        pf = self.prefilling
        if pf:
            room = max(1, self.budget - n_dec)
            head = pf[0]
            done = head.prompt_total - head.remaining
            if head.remaining >= room:
                prefill, head_only = room, True
            else:
                prefill = min(room, self.prefill_pending)
            pos = done + prefill / 2
        cost = self.step.cost
        t0, g0, f0, b0, l0 = cost(n_dec, self.ctx_dec, prefill, pos)
        k = MAX_RUN_STEPS
        if self.stall_s:
            t0 += self.stall_s
            g0 += self.stall_s
            self.stall_s = 0.0
            k = 1
        clock = self.clock
        if n_dec:
            heap = self.decoding
            while heap[0][2] != heap[0][3].epoch:
                heappop(heap)
            k = min(k, heap[0][0] - self.decode_steps, int((self.capacity - self.used) / n_dec))
        if head_only:
            k = min(k, pf[0].remaining // prefill)
        elif prefill:
            k = 1
        if self.inbox and self.n_running < self.max_seqs:
            k = min(k, ceil((self.inbox[0][0] - clock) / t0))
        k = max(1, min(k, ceil((t_end - clock) / t0)))
        if k > 1:
            t1, g1, f1, b1, l1 = cost(
                n_dec, self.ctx_dec + n_dec * (k - 1), prefill, pos + prefill * (k - 1)
            )
        else:
            t1, g1, f1, b1, l1 = t0, g0, f0, b0, l0
        half = k / 2.0
        self.clock = clock = clock + half * (t0 + t1)
        self.busy_s += half * (t0 + t1)
        self.gpu_s += half * (g0 + g1)
        self.flops += half * (f0 + f1)
        self.hbm_bytes += half * (b0 + b1)
        self.link_bytes += half * (l0 + l1)
        st = self.stats
        st.iter_tokens.observe(n_dec + prefill, k)
        if n_dec:
            st.itl.observe_linear(t0, t1, k, n_dec)
            st.gen_tokens += n_dec * k
            self.decode_steps += k
            self.ctx_dec += n_dec * k
            self.used += n_dec * k
            if self.decoding[0][0] <= self.decode_steps:
                self._finish_decodes(clock)
        if prefill:
            self._advance_prefill(prefill * k, head_only, clock)
        if self.cache.lru_tokens > self.capacity - self.used:
            self.cache.fit(self.capacity - self.used)

    def _finish_decodes(self, clock: float) -> None:
        heap, steps = self.decoding, self.decode_steps
        while heap and heap[0][0] <= steps:
            _, _, epoch, req = heappop(heap)
            if epoch != req.epoch:
                continue
            ctx = req.ctx_join + (steps - req.join_step)
            req.generated = ctx - req.prompt_len
            req.t_last_token = clock
            self.n_dec -= 1
            self.ctx_dec -= ctx
            self._finish(req, clock, ctx)

    def _advance_prefill(self, tokens: int, head_only: bool, clock: float) -> None:
        pf = self.prefilling
        if head_only:
            head = pf[0]
            head.remaining -= tokens
            self.prefill_pending -= tokens
            if head.remaining == 0:
                pf.popleft()
                self._first_token(head, clock)
            return
        while pf and tokens > 0:
            req = pf[0]
            take = min(req.remaining, tokens)
            req.remaining -= take
            tokens -= take
            self.prefill_pending -= take
            if req.remaining:
                break
            pf.popleft()
            self._first_token(req, clock)

    def _first_token(self, req: Request, t: float) -> None:
        st = self.stats
        req.generated += 1
        st.gen_tokens += 1
        self.used += 1
        if req.t_first < 0:
            req.t_first = t
            st.ttft.observe(t - req.t_arrival)
            st.prompt_tokens += req.prompt_len
            st.prompt_computed += req.prompt_len - req.cached_first
            st.prompt_cached += req.cached_first
        else:
            st.itl.observe(t - req.t_last_token)  # the gap a preemption caused
        req.t_last_token = t
        ctx = req.prompt_len + req.generated
        if req.generated >= req.target:
            self._finish(req, t, ctx)
            return
        req.state = DECODE
        req.epoch += 1
        req.ctx_join = ctx
        req.join_step = self.decode_steps
        heappush(
            self.decoding, (self.decode_steps + req.target - req.generated, req.rid, req.epoch, req)
        )
        self.n_dec += 1
        self.ctx_dec += ctx

    def _finish(self, req: Request, t: float, ctx: int) -> None:
        req.state = DONE
        self.n_running -= 1
        self.used -= ctx - req.shared
        normal = req.finish_reason in ("stop", "length")
        session = req.session
        if req.shared:
            # A session's previous turn is superseded by the context it just grew into.
            superseded = session is not None and req.turn > 1 and normal
            self.used -= self.cache.release(req.prefix_key, keep=not superseded)
        if session is not None and normal:
            self.cache.put(f"{session.key}:{req.turn}", ctx // self.bs * self.bs)
        if req.lora:
            self._drop_adapter(req.lora)
        self._record_finish(req, t)

    def _record_finish(self, req: Request, t: float) -> None:
        req.t_finish = t
        st = self.stats
        gen = req.generated
        if req.t_sched >= 0:
            decode = t - req.t_first
            st.finished((
                t - req.t_arrival, req.t_sched - req.t_engine, req.t_first - req.t_sched, decode,
                t - req.t_sched, decode / (gen - 1) if gen > 1 else 0.0,
                req.prompt_len - req.cached_first, req.prompt_len, gen, req.max_tokens,
            ))  # fmt: skip
        else:  # never scheduled: only the end-to-end and size histograms see it
            none = None
            st.finished((t - req.t_arrival, none, none, none, none, none, none,
                         req.prompt_len, gen, req.max_tokens))  # fmt: skip
        st.success[req.finish_reason] = st.success.get(req.finish_reason, 0) + 1
        self.on_finish(req, t)


def _priority(req: Request) -> int:
    return req.priority
