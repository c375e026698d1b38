"""Every threshold the walk uses, in one place, with its unit and the reason for it.

"High" is relative: each check compares the incident window with its baseline (the hour
before, clipped to what the backend holds) and, where a model has several replicas, with
the median of its peers. Absolute floors keep a quiet baseline (0.3 ms of queue time)
from turning noise into a tenfold "rise". The page and the JSON show this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Threshold:
    key: str
    ratio: float  # incident / baseline (or / peers) at least this ...
    delta: float  # ... and incident - baseline at least this, in `unit`
    unit: str
    why: str
    level: bool = False  # a level to reach (`delta`), not a rise over a reference

    def holds(self, value: float | None, reference: float | None) -> bool:
        """`value` rose past both the ratio and the absolute floor over `reference`."""
        if value is None or reference is None:
            return False
        return value - reference >= self.delta and value >= self.ratio * reference

    def falls(self, value: float | None, reference: float | None) -> bool:
        """`value` fell by the ratio (value <= reference / ratio) and the floor."""
        if value is None or reference is None:
            return False
        return reference - value >= self.delta and value * self.ratio <= reference

    def text(self) -> str:
        if self.level:
            return f">= {self.delta:g} {self.unit}"
        ratio = f"x{self.ratio:g}" if self.ratio != 1 else ""
        floor = f"{self.delta:+g} {self.unit}" if self.delta else ""
        return " and ".join(part for part in (ratio, floor) if part) or "any change"

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "ratio": self.ratio,
            "delta": self.delta,
            "unit": self.unit,
            "why": self.why,
            "level": self.level,
            "text": self.text(),
        }


def _t(key: str, ratio: float, delta: float, unit: str, why: str) -> Threshold:
    return Threshold(key, ratio, delta, unit, why)


def _level(key: str, level: float, unit: str, why: str) -> Threshold:
    return Threshold(key, 1.0, level, unit, why, level=True)


THRESHOLDS: dict[str, Threshold] = {
    t.key: t
    for t in (
        _t(
            "ttft_breach",
            1.5,
            0.15,
            "seconds",
            "mean TTFT up half again and 150 ms: ordinary bursts move it by a third at most",
        ),
        _t(
            "ttft_spike",
            3.0,
            0.1,
            "seconds",
            "a replica's TTFT over one grid step at three times its baseline median and +100 ms: "
            "a brief spike (a cold restart) that a window mean hides; quiet replicas swing ~2.5x",
        ),
        _t(
            "itl_breach",
            1.3,
            0.003,
            "seconds",
            "mean inter-token latency up 30 % and 3 ms against its own baseline: a model's "
            "batch swings with its traffic, moving ITL by up to ~26 % in an ordinary hour (a "
            "straggler among peers is caught by itl_outlier instead)",
        ),
        _t(
            "itl_outlier",
            1.12,
            0.001,
            "seconds",
            "a replica's mean ITL this far above the median of its peers is a straggler",
        ),
        _t(
            "itl_alike",
            1.1,
            0.001,
            "seconds",
            "every replica of the model slower by at least this: the step itself grew",
        ),
        _level(
            "itl_alike_spread",
            0.5,
            "ratio",
            "the smallest ITL rise among the model's replicas is at least half the largest: a "
            "change to every replica's step slows them about equally, while one replica far "
            "ahead of its peers is that replica's own question (straggler, preemption)",
        ),
        _level(
            "down_share",
            0.5,
            "ratio",
            "a replica missing at least half of the window's scrapes (or down at its end) is "
            "down, not restarting: a restart is back within its load time",
        ),
        _t(
            "gateway_error_share",
            3.0,
            0.02,
            "ratio",
            "gateway 4xx+5xx share of requests up threefold and 2 points",
        ),
        _t(
            "retry_rate",
            3.0,
            0.2,
            "requests_per_second",
            "gateway retries tripled and +0.2/s: clients and the gateway resending what "
            "timed out or failed",
        ),
        _t(
            "gateway_amplification",
            1.3,
            0.0,
            "ratio",
            "gateway requests per engine-finished request up 30 %: retries, not new users",
        ),
        _t(
            "prober_fail_share",
            1.5,
            0.1,
            "ratio",
            "golden-set fail share up half again and 10 points; fewer than 10 checks decide "
            "nothing",
        ),
        _level("queue_share", 0.5, "ratio", "queue time explains at least half of the TTFT rise"),
        _level(
            "prefill_share",
            0.4,
            "ratio",
            "prefill time explains at least 40 % of the TTFT rise",
        ),
        _level(
            "frontend_share",
            0.5,
            "ratio",
            "TTFT minus queue minus prefill explains at least half of the rise (inferred: "
            "vLLM has no tokenization metric)",
        ),
        _level(
            "kv_full",
            0.9,
            "ratio",
            "KV cache usage peaking at 90 % or more: admission waits for blocks",
        ),
        _t(
            "capacity_waiting",
            2.0,
            1.0,
            "requests",
            "requests waiting with reason=capacity doubled and at least one on average",
        ),
        _t(
            "deferred_waiting",
            2.0,
            1.0,
            "requests",
            "requests waiting with reason=deferred (LoRA slots) doubled and at least one",
        ),
        _level(
            "lora_waiting_share",
            0.6,
            "ratio",
            "vllm:lora_requests_info lists waiting adapters in 60 % more of the scrapes than "
            "before (versions without waiting_by_reason): a burst makes adapters wait now and "
            "then, a working set beyond max_loras keeps them waiting",
        ),
        _t(
            "preemptions",
            2.0,
            0.01,
            "events_per_second",
            "preemptions at least 0.01/s and double the baseline: a healthy engine has none",
        ),
        _t(
            "request_rate",
            1.3,
            0.2,
            "requests_per_second",
            "arrivals up 30 % and 0.2/s: more work than the hour before",
        ),
        _t(
            "prompt_tokens",
            1.1,
            300.0,
            "tokens",
            "mean prompt up 10 % and 300 tokens: long contexts arrived",
        ),
        _t(
            "prefix_hit_drop",
            1.25,
            0.02,
            "ratio",
            "prefix-cache hit ratio down a fifth and 2 points: a cold cache",
        ),
        _t(
            "cpu_rate",
            1.3,
            0.05,
            "cpu_seconds_per_second",
            "API-server CPU up 30 % and 0.05 core: the tokenizer works harder",
        ),
        _t(
            "batch_growth",
            1.5,
            4.0,
            "requests",
            "running requests up half again and 4: the batch grew past an ordinary hour's "
            "swing (natural growth reaches ~40 %)",
        ),
        _t(
            "sm_clock_drop",
            1.25,
            100.0,
            "MHz",
            "SM clock down a fifth and 100 MHz: a power or thermal brake",
        ),
        _t(
            "power_drop",
            1.15,
            20.0,
            "watts",
            "board power down 15 % and 20 W while work continues: throttled",
        ),
        _t(
            "nvlink_drop",
            1.2,
            0.0,
            "bytes_per_second",
            "NVLink traffic down a fifth on a tensor-parallel replica: a link in recovery",
        ),
        _t(
            "pcie_rise",
            2.0,
            1e7,
            "bytes_per_second",
            "PCIe transmit doubled and +10 MB/s: peer traffic detoured off NVLink",
        ),
    )
}


# A prompt-mean rise must also stand this many standard errors clear of chance: a quiet
# replica's window of a few hundred requests moves its mean by a tenth on its own.
PROMPT_Z = 3.5
# Evidence that rests on fewer requests than this in a window is too thin to decide.
MIN_REQUESTS = 20.0
# An XID above 0 in the window is evidence by itself; 74 is an NVLink error (DCGM docs).
XID_NVLINK = 74.0


def threshold_table() -> tuple[dict[str, Any], ...]:
    return tuple(t.to_dict() for t in THRESHOLDS.values()) + (
        {
            "key": "prompt_z",
            "ratio": 1.0,
            "delta": PROMPT_Z,
            "unit": "standard_errors",
            "why": "a prompt-mean rise clear of chance at the window's request counts",
            "text": f">= {PROMPT_Z:g} standard errors",
        },
        {
            "key": "min_requests",
            "ratio": 1.0,
            "delta": MIN_REQUESTS,
            "unit": "requests",
            "why": "fewer requests in a window decide nothing",
            "text": f">= {MIN_REQUESTS:g}",
        },
    )
