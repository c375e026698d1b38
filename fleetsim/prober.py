"""A golden-set prober: one known prompt per model every period, sent through the gateway.

A check passes when the answer arrives complete within the deadline and the
model gets that item right (each model answers a fixed share of the golden
set correctly). Errors, rejections and timeouts fail, so the prober's failure
rate is the quality signal that moves when serving breaks.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import count

from fleetsim.families import Family
from fleetsim.hardware import ModelSpec
from fleetsim.request import Request
from fleetsim.workloads import CHAT_HANDLER

PERIOD_S = 30.0
DEADLINE_S = 20.0
GOLDEN_SET_SIZE = 50
TENANT = "fleetscope-prober"
PREFIX = "fleetscope_prober_"


class Prober:
    def __init__(self, models: list[ModelSpec], seed: int, ids: count, created: float) -> None:
        self.models = models
        self.ids = ids
        self.created = created
        rng = random.Random(f"golden:{seed}")
        # Item difficulty in [0, 1): a model answers the items easier than its quality.
        self.difficulty = [rng.random() for _ in range(GOLDEN_SET_SIZE)]
        self.prompts = [rng.randint(120, 600) for _ in range(GOLDEN_SET_SIZE)]
        self.next_t = {m.served_name: (i * 7.0) % PERIOD_S for i, m in enumerate(models)}
        self.quality = {m.served_name: m.quality for m in models}
        self.item = dict.fromkeys(self.next_t, 0)
        self.results = {m: {"pass": 0, "fail": 0} for m in self.next_t}
        self.last = dict.fromkeys(self.next_t, 0.0)

    def arrivals_until(self, t_end: float) -> Iterator[Request]:
        for model, t in self.next_t.items():
            while t < t_end:
                item = self.item[model]
                self.item[model] = (item + 1) % GOLDEN_SET_SIZE
                req = Request(
                    next(self.ids), TENANT, "probe", model, CHAT_HANDLER, False,
                    self.prompts[item], 24 + item % 40, 128, None, DEADLINE_S,
                    f"golden:{model}", 96, t, (item * 0.618) % 1.0,
                )  # fmt: skip
                req.probe_item = item
                yield req
                t += PERIOD_S
            self.next_t[model] = t

    def record(
        self, req: Request, t: float, outcome: str, unix: float, quality: float | None = None
    ) -> None:
        """`quality` is that of the artifact the serving replica runs, if not the model's."""
        ok = outcome == "ok" and req.finish_reason in ("stop", "length")
        on_time = t - req.t_arrival <= DEADLINE_S
        correct = self.difficulty[req.probe_item] < (quality or self.quality[req.model])
        self.results[req.model]["pass" if ok and on_time and correct else "fail"] += 1
        self.last[req.model] = unix

    def families(self) -> list[Family]:
        checks = Family(
            PREFIX + "checks",
            "counter",
            "Golden-set checks by model and result (pass or fail).",
        )
        last = Family(
            PREFIX + "last_check_timestamp_seconds",
            "gauge",
            "When the last golden-set check of the model completed.",
        )
        size = Family(PREFIX + "golden_set_size", "gauge", "Items in the golden set.")
        for model in sorted(self.results):
            labels = (("model_name", model),)
            for result in ("fail", "pass"):
                value = self.results[model][result]
                checks.add_counter((*labels, ("result", result)), value, self.created)
            last.add(labels, self.last[model])
            size.add(labels, float(GOLDEN_SET_SIZE))
        return [checks, last, size]
