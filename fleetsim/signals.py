"""Checking a scenario's ground truth against what the fleet actually exposed.

A `Recording` holds a history's scrapes in memory: either the families a `History`
yields (`Recording.of`) or, as a consumer would see them, the OpenMetrics file it
wrote (`Recording.read`). `measure` reduces one expected signal of the manifest to a
number before and during the incident window, the way a dashboard query would
(gauge average, counter increase per second with resets, histogram mean, the extreme
of a brief dip or spike); `moved` says whether it went the way, and as far, as the
signal's own thresholds say.

A labelled counter series that first appears inside the window (an error counter is
born at its first increment, as prometheus_client creates labelled children) counts
as rising from 0, which PromQL's `increase()` alone would miss.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetsim.families import Labels
from fleetsim.history import History

Flat = dict[tuple[str, Labels], float]
EVENT_KINDS = ("up", "present", "absent", "reset", "changes")
COUNTER_KINDS = ("rate", "mean", "ratio", "reset", "changes")
SUFFIXES = ("_total", "_bucket", "_count", "_sum")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_UNESCAPE = re.compile(r"\\(.)")


@dataclass
class Recording:
    manifest: dict[str, Any]
    times: list[float] = field(default_factory=list)
    scrapes: dict[str, list[Flat | None]] = field(default_factory=dict)  # by instance
    types: dict[str, str] = field(default_factory=dict)  # sample name -> family type

    @classmethod
    def of(cls, history: History) -> Recording:
        """Every scrape of `history`, from the families it yields."""
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

    @classmethod
    def read(
        cls,
        path: str | Path,
        manifest: dict[str, Any],
        names: Iterable[str] | None = None,
        instances: Iterable[str] | None = None,
    ) -> Recording:
        """The OpenMetrics history at `path`, as Prometheus would have stored it.

        A target's scrape is None where its `up` sample is 0. Labels keep everything on
        the line but `instance` (so `job`, `pod`, `node` are there too). With `names`
        (sample names, or family names for every sample of the family) and `instances`,
        only those and `up` are kept.
        """
        wanted = None if names is None else {"up", *names}
        targets = None if instances is None else set(instances)
        rec = cls(manifest)
        by_time: dict[float, dict[str, Flat | None]] = {}
        family, family_type, whole, some = "", "", False, False
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("#"):
                    if line.startswith("# TYPE "):
                        _, _, family, family_type = line.split()
                        whole = wanted is None or family in wanted
                        some = whole or any(n.startswith(family) for n in wanted or ())
                    continue
                if not some:
                    continue
                name, labels, value, ts = _sample(line.rstrip("\n"))
                if not whole and name not in (wanted or ()):
                    continue
                instance = ""
                rest = []
                for k, v in labels:
                    if k == "instance":
                        instance = v
                    else:
                        rest.append((k, v))
                if targets is not None and instance not in targets:
                    continue
                scrape = by_time.setdefault(ts, {})
                if name == "up":
                    if value == 0:
                        scrape[instance] = None
                    else:
                        scrape.setdefault(instance, {})
                    continue
                flat = scrape.setdefault(instance, {})
                if flat is not None:
                    flat[(name, tuple(rest))] = value
                    rec.types[name] = family_type
        rec.times = sorted(by_time)
        for instance in sorted({i for scrape in by_time.values() for i in scrape}):
            rec.scrapes[instance] = [by_time[t].get(instance) for t in rec.times]
        return rec

    @classmethod
    def of_signals(cls, path: str | Path, manifest: dict[str, Any]) -> Recording:
        """Only what the manifest's signals read, from the OpenMetrics history at `path`."""
        instances = {i for s in manifest["expected_signals"] for i in instances_for(manifest, s)}
        return cls.read(path, manifest, signal_names(manifest), instances)

    def values(
        self, instance: str, name: str, labels: dict[str, Any], aggregate: str = "sum"
    ) -> list[float | None]:
        """Per scrape: the sum (or max, or mean) of matching series (0 if none yet), None if
        the target was down."""
        out: list[float | None] = []
        want = set(labels.items())
        for flat in self.scrapes[instance]:
            if flat is None:
                out.append(None)
                continue
            found = [v for (n, lab), v in flat.items() if n == name and want <= set(lab)]
            if aggregate == "max":
                out.append(max(found, default=0.0))
            elif aggregate == "avg":
                out.append(sum(found) / len(found) if found else 0.0)
            else:
                out.append(sum(found))
        return out

    def has(
        self, instance: str, name: str, labels: dict[str, Any] | None = None
    ) -> list[bool | None]:
        """Per scrape: whether the family has samples (with `labels`, if given), None if the
        target was down. `up` is there at every scrape, down or not."""
        if name == "up":
            return [True for _ in self.scrapes[instance]]
        names = {name, *(name + s for s in SUFFIXES)}
        want = set((labels or {}).items())
        return [
            None if flat is None else any(n in names and want <= set(lab) for n, lab in flat)
            for flat in self.scrapes[instance]
        ]


def _sample(line: str) -> tuple[str, Labels, float, float]:
    brace = line.find("{")
    if brace < 0:
        name, value, ts = line.split(" ")
        return name, (), float(value), float(ts)
    close = line.rfind("}")
    labels = tuple((k, _UNESCAPE.sub(_unescaped, v)) for k, v in _LABEL.findall(line, brace, close))
    value, ts = line[close + 2 :].split(" ")
    return line[:brace], labels, float(value), float(ts)


def _unescaped(match: re.Match[str]) -> str:
    char = match.group(1)
    return "\n" if char == "n" else char


def signal_names(manifest: dict[str, Any]) -> set[str]:
    """The sample names (or, for presence, family names) the manifest's signals read."""
    names = set()
    for signal in manifest["expected_signals"]:
        metric = signal["metric"]
        if signal["kind"] == "mean":
            names |= {metric + "_sum", metric + "_count"}
        elif signal["kind"] in ("present", "absent"):
            names |= {metric, *(metric + s for s in SUFFIXES)}
        else:
            names.add(metric)
        if signal.get("denominator"):
            names.add(signal["denominator"])
    return names


def instances_for(manifest: dict[str, Any], signal: dict[str, Any]) -> list[str]:
    if signal["scope"] in ("gateway", "prober"):
        return [t["instance"] for t in manifest["targets"] if t["kind"] == signal["scope"]]
    kind = "dcgm" if signal["metric"].startswith("DCGM_") else "vllm"
    indices = signal.get("replicas")
    if indices is None:
        indices = [r["index"] for r in manifest["affected_replicas"]]
    return [manifest["replicas"][i]["instances"][kind] for i in indices]


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
        # on any affected replica, against the usual level (per replica) before it.
        typical = _reduce(rec, {**signal, "peak": None, "aggregate": "avg"}, instances, before)
        return typical, _reduce(rec, signal, instances, (window["start"], window["end"]))
    return (
        _reduce(rec, signal, instances, before),
        _reduce(rec, signal, instances, during),
    )


def moved(signal: dict[str, Any], before: float, during: float) -> bool:
    """Whether (before, during) went the signal's way, by at least its thresholds: the
    larger of `rel` x before and `delta` (for flat/not_up: at most that far)."""
    if math.isnan(before) or math.isnan(during):
        return False
    direction = signal["direction"]
    need = max(signal.get("rel", 0.0) * abs(before), signal.get("delta", 0.0))
    if direction == "up":
        return during > before and during - before >= need
    if direction == "down":
        return during < before and before - during >= need
    if direction == "flat":
        return abs(during - before) <= need
    if direction == "not_up":
        return during - before <= need
    if direction == "absent":
        return before > 0 and during == 0  # seen before, gone during
    return during > 0 and before == 0  # present / reset / changes: absent before, seen during


def check(rec: Recording) -> list[tuple[dict[str, Any], float, float, bool]]:
    """Every expected signal of the recording's manifest: (signal, before, during, moved)."""
    out = []
    for signal in rec.manifest["expected_signals"]:
        before, during = measure(rec, signal)
        out.append((signal, before, during, moved(signal, before, during)))
    return out


def _reduce(
    rec: Recording, signal: dict[str, Any], instances: list[str], span: tuple[float, float]
) -> float:
    idx = [i for i, t in enumerate(rec.times) if span[0] <= t < span[1]]
    kind, name, labels = signal["kind"], signal["metric"], signal["labels"]
    aggregate = signal.get("aggregate") or "sum"
    if kind in COUNTER_KINDS and idx and idx[0] > 0:
        idx.insert(0, idx[0] - 1)  # the scrape before the span anchors the first increase
    peak = signal.get("peak")
    pick: Any = min if peak == "min" else max
    total = {"min": math.inf, "max": -math.inf}.get(peak or "", 0.0)
    num = den = 0.0
    for inst in instances:
        if kind == "up":
            up = [rec.scrapes[inst][i] is not None for i in idx]
            share = sum(up) / max(len(up), 1)
            total = pick(total, float(min(up, default=True))) if peak else total + share
        elif kind == "present":
            has = rec.has(inst, name, labels)
            total += sum(bool(has[i]) for i in idx) / max(len(idx), 1)
        elif kind == "absent":
            flags = [h for h in (rec.has(inst, name, labels)[i] for i in idx) if h is not None]
            total += sum(flags) / len(flags) if flags else math.nan
        elif kind == "gauge":
            values = rec.values(inst, name, labels, aggregate)
            seen = [v for v in (values[i] for i in idx) if v is not None]
            if peak:
                total = pick(total, pick(seen, default=total))
            else:
                total += sum(seen) / len(seen) if seen else 0.0
        elif kind == "reset":
            total += _resets(_at(rec.values(inst, name, labels), idx))
        elif kind == "changes":
            total += _changes(_at(rec.values(inst, name, labels), idx))
        elif kind == "rate":
            total += _increase(_at(rec.values(inst, name, labels), idx))
        elif kind in ("mean", "ratio") and peak:
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
    if kind in ("gauge", "up") and aggregate != "sum" and not peak:
        return total / max(len(instances), 1)  # the mean over the affected replicas
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
