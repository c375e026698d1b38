"""The fleet's gateway: routes requests to replicas and counts per tenant.

vLLM has no tenant dimension (reference section 11), so per-tenant cost and
SLOs need a source in front of it. The names below are FleetScope's gateway
convention (documented in fleetsim/README.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count

from fleetsim.families import Family
from fleetsim.histogram import B_REQ, B_TOK, B_TTFT, Hist
from fleetsim.replica import Replica
from fleetsim.request import Request

GATEWAY_OVERHEAD_S = 0.0008
PREFIX = "fleetscope_gateway_"
STATUS = {"ok": "2xx", "abort": "4xx", "rejected": "4xx", "lost": "5xx", "unavailable": "5xx",
          "timeout": "5xx", "gateway_error": "5xx"}  # fmt: skip
# A retried upstream attempt goes out this long after the timeout; at least the fleet's
# slice, so it always lands in every replica's future.
RETRY_BACKOFF_S = 1.0
GOLDEN = 0.6180339887  # spreads request ids evenly over [0, 1)


class TenantStats:
    __slots__ = (
        "requests", "retries", "prompt", "generation", "cached", "ttft", "tpot", "duration",
    )  # fmt: skip

    def __init__(self) -> None:
        self.requests: dict[str, int] = {}
        self.retries = 0
        self.prompt = 0
        self.generation = 0
        self.cached = 0
        self.ttft = Hist(B_TTFT)
        self.tpot = Hist(B_TOK)
        self.duration = Hist(B_REQ)


class Gateway:
    def __init__(
        self,
        replicas: Sequence[Replica],
        created: float,
        on_unavailable: Callable[[Request, float, str], None],
        ids: count | None = None,
    ) -> None:
        self.replicas = list(replicas)
        self.on_unavailable = on_unavailable
        self.ids = count(1 << 40) if ids is None else ids
        # Configuration scenarios change, by served model name: an upstream timeout (an
        # attempt not started by then is abandoned) with how many times to retry it, and
        # the share of requests the gateway's own auth/config path fails with a 5xx.
        self.upstream_policy: dict[str, tuple[float, int]] = {}
        self.error_share: dict[str, float] = {}
        self.by_model: dict[str, list[Replica]] = {}
        for replica in replicas:
            self.by_model.setdefault(replica.cfg.model.served_name, []).append(replica)
        self.created = created
        self.tenants: dict[tuple[str, str], TenantStats] = {}
        self.adapters: set[tuple[str, str, str]] = set()  # (tenant, model, adapter)

    def route(self, req: Request, pinned: tuple[int, ...] | None = None) -> Replica | None:
        """A healthy replica for the request: sticky for sessions, else uniform random."""
        session = req.session
        if session is not None and session.replica >= 0:
            sticky = self.replicas[session.replica]
            if sticky.up:
                return sticky
        pool = self.by_model.get(req.model, [])
        if pinned is not None:
            pool = [self.replicas[i] for i in pinned]
        healthy = [r for r in pool if r.up]
        if not healthy:
            return None
        choice = healthy[int(req.route_u * len(healthy))]
        if session is not None:
            session.replica = choice.index
        return choice

    def dispatch(self, req: Request, pinned: tuple[int, ...] | None = None) -> Replica | None:
        if req.lora:
            self.adapters.add((req.tenant, req.model, req.lora))
        share = self.error_share.get(req.model)
        if share and (req.rid * GOLDEN) % 1.0 < share:
            self.on_unavailable(req, req.t_arrival, "gateway_error")  # never reaches a replica
            return None
        if req.attempt and not req.gateway_try:
            self._stats(req).retries += 1  # the client's retry-count header says so
        policy = self.upstream_policy.get(req.model)
        if policy is not None and policy[0] < req.timeout:
            # The engine drops a queued request whose connection closed; modelled as a
            # shorter timeout, the engine aborts it unscheduled exactly when the gateway
            # gives up on it.
            req.client_timeout = req.client_timeout or req.timeout
            req.timeout = policy[0]
        replica = self.route(req, pinned)
        if replica is None:
            self.on_unavailable(req, req.t_arrival, "unavailable")  # 503 from the gateway
        else:
            replica.submit(req)
        return replica

    def retry_upstream(self, req: Request, t: float) -> Request | None:
        """The gateway's next upstream attempt for `req`, whose attempt timed out unstarted
        at `t`, or None when its policy allows no more (the client then gets a 504)."""
        policy = self.upstream_policy.get(req.model)
        if policy is None or req.gateway_try >= policy[1]:
            return None
        rid = next(self.ids)
        again = Request(
            rid, req.tenant, req.workload, req.model, req.handler, req.stream,
            req.prompt_len, req.natural_len, req.max_tokens, req.abort_after,
            req.client_timeout or req.timeout, req.prefix_key, req.prefix_len,
            t + RETRY_BACKOFF_S, (rid * GOLDEN) % 1.0,
        )  # fmt: skip
        again.session, again.turn, again.lora = req.session, req.turn, req.lora
        again.origin, again.attempt, again.probe_item = req.origin, req.attempt, req.probe_item
        again.gateway_try = req.gateway_try + 1
        self._stats(req).retries += 1
        return again

    def _stats(self, req: Request) -> TenantStats:
        stats = self.tenants.get((req.tenant, req.model))
        if stats is None:
            stats = self.tenants[(req.tenant, req.model)] = TenantStats()
        return stats

    def record(self, req: Request, t: float, outcome: str) -> None:
        stats = self._stats(req)
        if outcome == "ok" and req.finish_reason == "abort":
            outcome = "abort"  # the client went away: the gateway logs a 499
        status = STATUS[outcome]
        stats.requests[status] = stats.requests.get(status, 0) + 1
        stats.duration.observe(t - req.t_arrival + GATEWAY_OVERHEAD_S)
        if outcome not in ("ok", "abort"):
            return
        stats.prompt += req.prompt_len
        stats.generation += req.generated
        stats.cached += req.cached_first
        if req.t_first >= 0:
            stats.ttft.observe(req.t_first - req.t_arrival + GATEWAY_OVERHEAD_S)
            decode = t - req.t_first
            stats.tpot.observe(decode / (req.generated - 1) if req.generated > 1 else 0.0)

    def families(self) -> list[Family]:
        created = self.created
        requests = Family(
            PREFIX + "requests",
            "counter",
            "Requests answered by the gateway, by tenant, model and HTTP status class.",
        )
        retries = Family(
            PREFIX + "retries",
            "counter",
            "Attempts that repeat an earlier one: client retries and the gateway's own "
            "upstream retries.",
        )
        counters = [
            Family(PREFIX + "prompt_tokens", "counter", "Prompt tokens of served requests."),
            Family(PREFIX + "generation_tokens", "counter", "Generated tokens of served requests."),
            Family(
                PREFIX + "cached_prompt_tokens",
                "counter",
                "Prompt tokens served from the prefix cache (usage.prompt_tokens_details).",
            ),
        ]
        hists = [
            Family(PREFIX + "request_duration_seconds", "histogram",
                   "Gateway-measured request latency, arrival to last byte."),
            Family(PREFIX + "time_to_first_token_seconds", "histogram",
                   "Gateway-measured time to first token."),
            Family(PREFIX + "time_per_output_token_seconds", "histogram",
                   "Per request: decode time divided by (generated tokens - 1)."),
        ]  # fmt: skip
        for (tenant, model), st in sorted(self.tenants.items()):
            labels = (("model_name", model), ("tenant", tenant))
            for status, value in sorted(st.requests.items()):
                requests.add_counter((*labels, ("status", status)), value, created)
            if st.retries:  # born at its first increment, as a labelled child is
                retries.add_counter(labels, st.retries, created)
            for fam, value in zip(counters, (st.prompt, st.generation, st.cached), strict=True):
                fam.add_counter(labels, value, created)
            for fam, hist in zip(hists, (st.duration, st.ttft, st.tpot), strict=True):
                fam.add_histogram(labels, hist, created)
        adapters = Family(
            PREFIX + "lora_adapter_info",
            "gauge",
            "LoRA adapters the gateway has routed, with the tenant that owns each.",
        )
        for tenant, model, adapter in sorted(self.adapters):
            adapters.add((("adapter", adapter), ("model_name", model), ("tenant", tenant)), 1.0)
        return [requests, retries, *counters, *hists, adapters]
