"""What a walk returns: a verdict per node of the tree, the numbers behind each, and the
breach, baseline, changes and workload shifts it read. `Walk.to_dict()` is the stable
JSON contract (`manage.py triage --json`, frozen incident evidence, exports).

Verdicts:
- supported: the node's own evidence holds against its baseline and thresholds;
- ruled_out: its evidence was read and does not hold (or another leaf explains it);
- insufficient: the evidence it needs is missing, stale, covers too few replicas or is
  too imprecise (a quantile past the last bucket edge is not a value); `missing` says what.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["supported", "ruled_out", "insufficient"]
Side = Literal["ttft", "tpot", "availability", "quality", "inventory", "none"]
CONTRACT_VERSION = 1


@dataclass(frozen=True)
class Figure:
    """One number a node used: the incident window's value against its baseline, its
    peers (the other replicas serving the same model) and the threshold that decides."""

    name: str  # "queue_share_of_ttft"
    unit: str  # "seconds", "ratio", "requests_per_second", ...
    value: float | None
    baseline: float | None = None
    peers: float | None = None
    threshold: str = ""  # "x2.0 baseline and +0.1 s"
    source: str = ""  # metric names and statistic: "mean of vllm:request_queue_time_seconds"
    requests: float | None = None  # observations the value rests on, where it counts
    replicas: tuple[str, ...] = ()  # instances the value covers
    bound: str = ""  # "> 640 s" or "interpolated within (160 s, 640 s]" when imprecise
    day_before: float | None = None  # the same window a day earlier, where it was read

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "value": self.value,
            "baseline": self.baseline,
            "day_before": self.day_before,
            "peers": self.peers,
            "threshold": self.threshold,
            "source": self.source,
            "requests": self.requests,
            "replicas": list(self.replicas),
            "bound": self.bound,
        }


@dataclass(frozen=True)
class NodeResult:
    id: str  # "ttft.queue.kv_capacity"; leaves use the simulator's branch identifiers
    question: str
    leaf: bool
    verdict: Verdict
    reason: str  # one sentence: why this verdict
    figures: tuple[Figure, ...] = ()
    confidence: float = 0.0  # 0..1: how far past its thresholds the evidence sits
    replicas: tuple[str, ...] = ()  # instances that stand out
    missing: tuple[str, ...] = ()  # what it needed and did not have
    runbook: str = ""  # runbook slug (leaves)
    parent: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent": self.parent,
            "question": self.question,
            "leaf": self.leaf,
            "verdict": self.verdict,
            "reason": self.reason,
            "figures": [f.to_dict() for f in self.figures],
            "confidence": round(self.confidence, 3),
            "replicas": list(self.replicas),
            "missing": list(self.missing),
            "runbook": self.runbook,
        }


@dataclass(frozen=True)
class Breach:
    """What is breached, on which side, since when, read from an SLO or from a metric
    against its baseline."""

    side: Side
    found: bool
    description: str
    source: str  # "slo:chat-latency" or "metric"
    since: str | None = None  # ISO time the breach began (change point), when known
    figures: tuple[Figure, ...] = ()
    sides: tuple[Side, ...] = ()  # every side breached, worst first

    def to_dict(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "side": self.side,
            "sides": list(self.sides),
            "description": self.description,
            "source": self.source,
            "since": self.since,
            "figures": [f.to_dict() for f in self.figures],
        }


@dataclass(frozen=True)
class Change:
    """Something that changed around the window: a restart, a dialect or version change,
    a cache config change, a replica count change, a workload shift."""

    kind: str  # restart | dialect | cache_config | replicas | workload | configuration
    at: str | None  # ISO time, when known
    instance: str
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "at": self.at,
            "instance": self.instance,
            "description": self.description,
        }


def _significant(value: float | None) -> float | None:
    # Six significant digits: what a chart can show, at a third of the JSON's size.
    return None if value is None else float(f"{value:.6g}")


@dataclass(frozen=True)
class Chart:
    """A series the walk read, per replica on one time grid, frozen with the walk so the
    incident page can draw it after the metrics are gone. None is a gap, never a zero."""

    name: str  # "kv_usage"
    unit: str
    source: str  # what it is and the metric read: "KV cache usage (gauge) (vllm:kv_...)"
    timestamps: tuple[float, ...]  # unix seconds (UTC), shared by every series
    series: tuple[tuple[str, tuple[float | None, ...]], ...]  # (replica, values)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "source": self.source,
            "t": list(self.timestamps),
            "series": [
                {"replica": replica, "v": [_significant(v) for v in values]}
                for replica, values in self.series
            ],
        }


@dataclass(frozen=True)
class Walk:
    fleet: str
    model_name: str | None
    backend: str
    window: tuple[str, str]  # ISO start, end (UTC)
    baseline: tuple[str, str]
    breach: Breach
    nodes: tuple[NodeResult, ...]
    changes: tuple[Change, ...] = ()
    workload: tuple[Figure, ...] = ()
    canary: Mapping[str, Any] | None = None
    queries: int = 0  # queries sent (Prometheus) or specs evaluated (embedded store)
    thresholds: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = field(default=())
    day_before: tuple[str, str] | None = None  # the same window a day earlier, when read
    charts: tuple[Chart, ...] = ()

    @property
    def supported(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes if n.leaf and n.verdict == "supported")

    def node(self, node_id: str) -> NodeResult:
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": CONTRACT_VERSION,
            "fleet": self.fleet,
            "model_name": self.model_name,
            "backend": self.backend,
            "window": {"start": self.window[0], "end": self.window[1]},
            "baseline": {"start": self.baseline[0], "end": self.baseline[1]},
            "day_before": (
                {"start": self.day_before[0], "end": self.day_before[1]}
                if self.day_before
                else None
            ),
            "breach": self.breach.to_dict(),
            "side": self.breach.side,
            "nodes": [n.to_dict() for n in self.nodes],
            "supported": list(self.supported),
            "changes": [c.to_dict() for c in self.changes],
            "workload": [f.to_dict() for f in self.workload],
            "canary": dict(self.canary) if self.canary is not None else None,
            "queries": self.queries,
            "thresholds": [dict(t) for t in self.thresholds],
            "notes": list(self.notes),
            "charts": [c.to_dict() for c in self.charts],
        }
