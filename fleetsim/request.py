"""One simulated inference request and its timeline."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleetsim.workloads import Session, Stream

WAITING, PREFILL, DECODE, DONE = 0, 1, 2, 3


class Request:
    """A request as the gateway, the API server and the engine see it.

    Times are simulated seconds. `target` is how many tokens the engine will
    generate before the request finishes (natural length, `max_tokens`, the
    context limit or a client abort, whichever comes first).
    """

    __slots__ = (
        "rid", "tenant", "workload", "model", "handler", "stream",
        "prompt_len", "natural_len", "max_tokens", "abort_after", "timeout",
        "prefix_key", "prefix_len", "session", "turn", "lora", "route_u", "probe_item",
        "t_arrival", "t_engine", "t_sched", "t_first", "t_last_token", "t_finish",
        "target", "generated", "cached_first", "remaining", "shared", "prompt_total",
        "ctx_join", "join_step", "epoch", "state", "finish_reason", "replica",
        "origin", "attempt", "gateway_try", "client_timeout", "priority",
    )  # fmt: skip

    def __init__(
        self,
        rid: int,
        tenant: str,
        workload: str,
        model: str,
        handler: str,
        stream: bool,
        prompt_len: int,
        natural_len: int,
        max_tokens: int | None,
        abort_after: int | None,
        timeout: float,
        prefix_key: str | None,
        prefix_len: int,
        t_arrival: float,
        route_u: float,
    ) -> None:
        self.rid = rid
        self.tenant = tenant
        self.workload = workload
        self.model = model
        self.handler = handler
        self.stream = stream
        self.prompt_len = prompt_len
        self.natural_len = natural_len
        self.max_tokens = max_tokens
        self.abort_after = abort_after
        self.timeout = timeout
        self.prefix_key = prefix_key
        self.prefix_len = prefix_len
        self.session: Session | None = None
        self.turn = 0
        self.lora: str | None = None
        self.route_u = route_u
        self.probe_item = -1
        self.t_arrival = t_arrival
        self.t_engine = -1.0
        self.t_sched = -1.0
        self.t_first = -1.0
        self.t_last_token = -1.0
        self.t_finish = -1.0
        self.target = 0
        self.generated = 0
        self.cached_first = 0
        self.remaining = 0
        self.shared = 0
        self.prompt_total = 0
        self.ctx_join = 0
        self.join_step = 0
        self.epoch = 0
        self.state = WAITING
        self.finish_reason = ""
        self.replica = -1
        self.origin: Stream | None = None  # the client that sent it, which may retry it
        self.attempt = 0  # the client's attempt (0: the first)
        self.gateway_try = 0  # the gateway's upstream attempt for this client request
        # Non-zero when the gateway's upstream timeout shortened `timeout`: the client's own.
        self.client_timeout = 0.0
        # vLLM's request priority (lower first): under `--scheduling-policy priority` the
        # scheduler admits lower values first and preempts the highest value first. Every
        # request but a scenario's background job leaves it 0, where that policy is FCFS.
        self.priority = 0

    def plan(self, max_model_len: int) -> None:
        """Fix how many tokens will be generated and why the request will stop."""
        limit = max_model_len - self.prompt_len
        target, reason = self.natural_len, "stop"
        if self.max_tokens is not None and self.max_tokens < target:
            target, reason = self.max_tokens, "length"
        if limit < target:
            target, reason = limit, "length"
        if self.abort_after is not None and self.abort_after < target:
            target, reason = self.abort_after, "abort"
        self.target = max(1, target)
        self.finish_reason = reason
