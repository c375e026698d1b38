"""The `preemption` scenario: a batch job sized to the whole KV cache, on a shared replica.

The job sends its requests in batches at priority 1: short prompts, long answers of nearly
equal length, as many as the KV cache holds once grown to full length, as if the replica
were its own. It waits for the whole batch, then sends the next. The replica runs
`--scheduling-policy priority` (everything else sends 0), so interactive requests are
admitted first and the batch's newest sequences are the ones preempted, to admit them or
when the batch's decodes outgrow the cache.

Each batch fills the cache only near its end, and what overflows it is the interactive
traffic's share: a brief overflow per batch, whatever the hour. Earlier attempts (a job
that keeps a fixed number of answers of random lengths in flight, out of phase) either
never overflowed or tipped into thrash, depending on the hour and the seed: once the cache
stays full, every step is slow, the interactive traffic holds several times its usual KV,
its multi-turn prefixes fall out of the cache, and re-admitted batch sequences recompute
their contexts, so admissions wait for the token budget and TTFT climbs (KV-bound
queueing, the `kv-pressure` incident). A batch that ends together ends the overflow too.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import count

from fleetsim.fleet import FleetModel
from fleetsim.request import Request
from fleetsim.scenarios.model import by_model
from fleetsim.workloads import MIN_THINK_S, WORKLOADS, Demand, Dist, Stream, Workload, variant

BATCH_SEQS_SHARE = 0.4  # a batch is this share of an engine's max_num_seqs
PROMPT = Dist(120, 0.1, 16, 1000)
ANSWER_SIGMA = 0.02  # near-equal answers: the batch grows, and ends, together
RAMP_S = 3.0  # a batch goes out over this long


class BatchWaves(Stream):
    """A batch job: `size` requests sent over `RAMP_S` at priority 1, then, once every
    answer is in and the job has done its own work for `MIN_THINK_S`, the next batch."""

    def __init__(
        self,
        demand: Demand,
        workload: Workload,
        size: int,
        *,
        seed: str,
        epoch: float,
        ids: count,
        window: tuple[float, float],
        pinned: tuple[int, ...],
    ) -> None:
        super().__init__(demand, workload, 0.0, seed=seed, epoch=epoch, ids=ids, window=window,
                         pinned=pinned, bursts=False, follow_diurnal=False)  # fmt: skip
        self.size = size
        self._spread = random.Random(f"batch:{seed}")
        self._starts: list[float] = []
        self._left = 0
        self._send(window[0])

    def _send(self, t: float) -> None:
        self._left = self.size
        self._starts = sorted(t + self._spread.uniform(0.0, RAMP_S) for _ in range(self.size))

    def arrivals_until(self, t_end: float) -> Iterator[Request]:
        while self._starts and self._starts[0] < t_end:
            req = self._make(self._starts.pop(0))
            req.priority = 1
            yield req

    def follow_up(self, req: Request, t_done: float) -> Request | None:
        self._left -= 1
        t = t_done + MIN_THINK_S
        if self._left <= 0 and self.window is not None and t < self.window[1]:
            self._send(t)
        return None


def preemption(fleet: FleetModel, targets: list[int], at: float, duration: float) -> None:
    for model, group in by_model(fleet, targets).items():
        cfg = group[0].cfg
        size = max(1, int(BATCH_SEQS_SHARE * cfg.deployment.max_num_seqs))
        # The longest answer (+10 %) must fit the context: on a short one the batch fills
        # less of the cache (every model of the default fleet has room).
        longest = (cfg.max_model_len - PROMPT.hi - 1) / 1.1
        answer = min(cfg.kv_tokens / size - PROMPT.mean, longest)
        wl = variant(WORKLOADS["batch"], name="batch-long-answers", system_tokens=0,
                     prompt=PROMPT, output=Dist(answer, ANSWER_SIGMA, int(0.9 * answer),
                                                int(1.1 * answer)),
                     max_tokens=int(1.1 * answer) + 1, max_tokens_share=1.0,
                     abort_share=0.0)  # fmt: skip
        demand = Demand("umbrella", model, "batch", 1.0)
        for replica in group:
            for engine in range(cfg.dp):  # one job per engine: each fills its own cache
                fleet.add_stream(BatchWaves(
                    demand, wl, size,
                    seed=f"{fleet.seed}:scenario:preempt:{model}:{replica.index}:{engine}",
                    epoch=fleet.epoch, ids=fleet.ids, window=(at, at + duration),
                    pinned=(replica.index,),
                ))  # fmt: skip
