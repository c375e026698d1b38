"""Checking a scenario's ground truth against what the fleet actually exposed.

A `Recording` keeps every scrape of a `History` in memory (fine for the short
runs tests use). `measure` reduces one expected signal to a number before and
during the incident window, the way a dashboard query would (gauge average,
counter rate with resets, histogram mean); `moved` says whether it went the
expected way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fleetsim.families import Labels
from fleetsim.history import History

Flat = dict[tuple[str, Labels], float]
RISE = 1.2  # "up" means at least 20% higher (and not just noise around zero)
FLAT_SHARE = 0.5
FLAT_ABS = 0.02
EVENT_KINDS = ("up", "present", "reset", "changes")
COUNTER_KINDS = ("rate", "mean", "ratio", "reset", "changes")


@dataclass
class Recording:
    manifest: dict[str, Any]
    times: list[float] = field(default_factory=list)
    scrapes: dict[str, list[Flat | None]] = field(default_factory=dict)  # by instance
    types: dict[str, str] = field(default_factory=dict)  # sample name -> family type

    @classmethod
    def of(cls, history: History) -> Recording:
        rec = cls(history.manifest)
        for unix, scrapes in history.scrapes():
            rec.times.append(unix)
            for target, families in scrapes:
                flat: Flat | None = None
                if families is not None:
                    flat = {}
                    for fam in families:
                        for suffix, labels, value in fam.samples:
                            flat[(fam.name + suffix, labels)] = value
                            rec.types[fam.name + suffix] = fam.type
                rec.scrapes.setdefault(target.instance, []).append(flat)
        return rec

    def values(self, instance: str, name: str, labels: dict[str, str]) -> list[float | None]:
        """Per scrape: the sum of matching series, or None if the target was down."""
        out: list[float | None] = []
        want = set(labels.items())
        for flat in self.scrapes[instance]:
            if flat is None:
                out.append(None)
                continue
            out.append(sum(v for (n, lab), v in flat.items() if n == name and want <= set(lab)))
        return out

    def has(self, instance: str, name: str) -> list[bool]:
        return [
            flat is not None and any(n == name for n, _ in flat) for flat in self.scrapes[instance]
        ]


def instances_for(manifest: dict[str, Any], signal: dict[str, Any]) -> list[str]:
    if signal["scope"] == "gateway":
        return [t["instance"] for t in manifest["targets"] if t["kind"] == "gateway"]
    kind = "dcgm" if signal["metric"].startswith("DCGM_") else "vllm"
    return [r["instances"][kind] for r in manifest["affected_replicas"]]


def measure(
    rec: Recording, signal: dict[str, Any], *, baseline_s: float = 240.0, settle_s: float = 60.0
) -> tuple[float, float]:
    """(before, during) for one expected signal of the recording's manifest."""
    window = rec.manifest["window"]
    before = (window["start"] - baseline_s, window["start"])
    during = (window["start"] + settle_s, window["end"])
    if signal["kind"] in EVENT_KINDS:
        during = (window["start"], window["end"])  # an event counts from the first moment
    if signal.get("within_s"):
        during = (window["start"], window["start"] + signal["within_s"])
    instances = instances_for(rec.manifest, signal)
    if signal.get("peak"):
        # A brief dip or spike: the most extreme scrape-to-scrape value in the window
        # on any affected replica, against the usual level before it.
        typical = _reduce(rec, {**signal, "peak": None}, instances, before)
        return typical, _reduce(rec, signal, instances, (window["start"], window["end"]))
    return (
        _reduce(rec, signal, instances, before),
        _reduce(rec, signal, instances, during),
    )


def moved(direction: str, before: float, during: float) -> bool:
    if direction == "up":
        return during > before * RISE and during - before > 1e-9
    if direction == "down":
        return during * RISE < before
    if direction == "flat":
        return abs(during - before) <= max(FLAT_SHARE * before, FLAT_ABS)
    return during > 0 and before == 0  # present / reset: absent before, seen during


def _reduce(
    rec: Recording, signal: dict[str, Any], instances: Iterable[str], span: tuple[float, float]
) -> float:
    idx = [i for i, t in enumerate(rec.times) if span[0] <= t < span[1]]
    kind, name, labels = signal["kind"], signal["metric"], signal["labels"]
    if kind in COUNTER_KINDS and idx and idx[0] > 0:
        idx.insert(0, idx[0] - 1)  # the scrape before the span anchors the first increase
    peak = signal.get("peak")
    total = {"min": math.inf, "max": -math.inf}.get(peak or "", 0.0)
    num = den = 0.0
    for inst in instances:
        if kind == "up":
            vals = rec.scrapes[inst]
            total += sum(vals[i] is not None for i in idx) / max(len(idx), 1)
        elif kind == "present":
            has = rec.has(inst, name)
            total += sum(has[i] for i in idx) / max(len(idx), 1)
        elif kind == "gauge":
            values = rec.values(inst, name, labels)
            seen = [v for v in (values[i] for i in idx) if v is not None]
            total += sum(seen) / len(seen) if seen else 0.0
        elif kind == "reset":
            total += _resets(_at(rec.values(inst, name, labels), idx))
        elif kind == "changes":
            total += _changes(_at(rec.values(inst, name, labels), idx))
        elif kind == "rate":
            total += _increase(_at(rec.values(inst, name, labels), idx))
        elif kind in ("mean", "ratio") and signal.get("peak"):
            pick = min if signal["peak"] == "min" else max
            total = pick(total, _extreme(rec, inst, signal, idx, pick))
        elif kind in ("mean", "ratio"):
            num_name = name + "_sum" if kind == "mean" else name
            den_name = name + "_count" if kind == "mean" else signal["denominator"]
            num += _increase(_at(rec.values(inst, num_name, labels), idx))
            den += _increase(_at(rec.values(inst, den_name, labels), idx))
        else:
            raise ValueError(f"unknown signal kind {kind!r}")
    if kind == "rate":
        return total / max(span[1] - span[0], 1e-9)
    if peak:
        return total if math.isfinite(total) else 0.0
    if kind in ("mean", "ratio"):
        return num / den if den else 0.0  # sum over replicas first, as sum(rate())/sum(rate())
    return total


def _extreme(rec: Recording, inst: str, signal: dict[str, Any], idx: list[int], pick: Any) -> float:
    """The most extreme scrape-to-scrape quotient of two counters on one target."""
    name = signal["metric"]
    num_name, den_name = (
        (name + "_sum", name + "_count")
        if signal["kind"] == "mean"
        else (name, signal["denominator"])
    )
    nums = rec.values(inst, num_name, signal["labels"])
    dens = rec.values(inst, den_name, signal["labels"])
    best = None
    prev: tuple[float, float] | None = None
    for i in idx:
        n, d = nums[i], dens[i]
        if n is None or d is None:
            continue
        if prev is not None:
            dn = n - prev[0] if d >= prev[1] else n  # a reset restarts both from zero
            dd = d - prev[1] if d >= prev[1] else d
            if dd > 0:
                value = dn / dd
                best = value if best is None else pick(best, value)
        prev = (n, d)
    if best is None:
        return math.inf if pick is min else -math.inf
    return best


def _at(values: list[float | None], idx: list[int]) -> list[float | None]:
    return [values[i] for i in idx]


def _increase(values: list[float | None]) -> float:
    """Counter increase with resets counted from zero, as PromQL's increase() does."""
    inc, prev = 0.0, None
    for v in values:
        if v is None:
            continue
        if prev is not None:
            inc += v - prev if v >= prev else v
        prev = v
    return inc


def _changes(values: list[float | None]) -> float:
    seen = [v for v in values if v is not None]
    return float(sum(b != a for a, b in zip(seen, seen[1:], strict=False)))


def _resets(values: list[float | None]) -> float:
    seen = [v for v in values if v is not None]
    return float(sum(b < a for a, b in zip(seen, seen[1:], strict=False)))
