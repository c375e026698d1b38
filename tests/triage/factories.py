"""Hand-built walks, incidents and Alertmanager payloads for the incident tests. A walk here
is a `Walk` as triage.walk returns it, so the stored JSON is the real contract."""

from __future__ import annotations

import json
from typing import Any

import pytest

from inventory.models import Fleet
from tests.queries.storefill import fleet_named
from triage import incidents
from triage.incidents import incident_open
from triage.models import Incident
from triage.walk.types import Breach, Change, Figure, NodeResult, Verdict, Walk

TOKEN = "test-alertmanager-token-0123456789"
HOSTILE = "<script>alert(1)</script>"

KV_FIGURE = Figure(
    "kv_cache_usage",
    "ratio",
    0.97,
    baseline=0.61,
    peers=0.95,
    threshold=">= 0.9",
    source="max of vllm:kv_cache_usage_perc",
    requests=1840.0,
    replicas=("10.0.0.1:8000", "10.0.0.2:8000"),
)
CANARY = {
    "leaf": "ttft.queue.kv_capacity",
    "variable": "max_num_seqs",
    "change": "256 -> 192",
    "scope": "one replica: 10.0.0.1:8000",
    "duration_seconds": 1800,
    "min_requests": 2000,
    "how": "restart the replica with the new flag",
    "success_gates": ["TTFT p99 <= 0.8 s", "no preemptions"],
    "rollback": ["TTFT p99 above baseline x1.2 for 5 minutes"],
    "text": "Lower max_num_seqs on one replica for 30 minutes.",
    "yaml": "canary:\n  variable: max_num_seqs\n  from: 256\n  to: 192\n",
}


def a_walk(
    *,
    fleet: str = "prod",
    supported: bool = True,
    reason: str = "the KV cache is full on 2 of 2 replicas",
    canary: dict[str, Any] | None = CANARY,
    notes: tuple[str, ...] = (),
) -> Walk:
    """TTFT breached, queueing for KV capacity supported (or, with `supported=False`,
    insufficient), load ruled out, prefill insufficient, TPOT ruled out."""
    leaf_verdict: Verdict = "supported" if supported else "insufficient"
    nodes = (
        NodeResult("ttft", "Is TTFT breached?", False, "supported", "TTFT p99 tripled"),
        NodeResult(
            "ttft.queue", "Is it queue time?", False, "supported", "queue is 80%", parent="ttft"
        ),
        NodeResult(
            "ttft.queue.kv_capacity",
            "Do requests wait for KV blocks?",
            True,
            leaf_verdict,
            reason,
            figures=(KV_FIGURE,),
            confidence=0.8,
            replicas=("10.0.0.1:8000",),
            missing=() if supported else ("vllm:num_requests_waiting_by_reason",),
            runbook="ttft-queue-kv_capacity",
            parent="ttft.queue",
        ),
        NodeResult(
            "ttft.queue.load",
            "Did load rise?",
            True,
            "ruled_out",
            "request rate is at its baseline",
            runbook="ttft-queue-load",
            parent="ttft.queue",
        ),
        NodeResult(
            "ttft.prefill",
            "Is it prefill time?",
            False,
            "insufficient",
            "prefill time is not exposed",
            missing=("vllm:request_prefill_time_seconds on 2 of 2 replicas",),
            parent="ttft",
        ),
        NodeResult("tpot", "Is TPOT breached?", False, "ruled_out", "ITL is at its baseline"),
    )
    return Walk(
        fleet=fleet,
        model_name="llama-3-8b",
        backend="local",
        window=("2026-11-18T10:30:00Z", "2026-11-18T11:00:00Z"),
        baseline=("2026-11-18T09:30:00Z", "2026-11-18T10:30:00Z"),
        breach=Breach(
            "ttft",
            True,
            "TTFT p99 is 2.4 s against 0.8 s",
            "metric",
            since="2026-11-18T10:42:00Z",
            figures=(Figure("ttft_p99", "seconds", 2.4, baseline=0.8, bound="> 2.0 s"),),
            sides=("ttft",),
        ),
        nodes=nodes,
        changes=(Change("restart", "2026-11-18T10:40:00Z", "10.0.0.2:8000", "restarted"),),
        canary=canary,
        queries=42,
        notes=notes,
    )


def a_fleet(slug: str = "prod") -> Fleet:
    return fleet_named(slug)


def an_incident(fleet: Fleet, title: str = "TTFT breach on prod", **more: Any) -> Incident:
    return incident_open(fleet=fleet, title=title, **more)


def walk_substituted(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Substitute the walk with `a_walk()` for the test; returns the list of the calls it
    gets (fleet slug and keywords), filled as they come."""
    calls: list[dict[str, Any]] = []

    def walk_fleet(fleet: Fleet, **kwargs: Any) -> Walk:
        calls.append({"fleet": fleet.slug, **kwargs})
        return a_walk(fleet=fleet.slug)

    monkeypatch.setattr(incidents, "walk_function", lambda: walk_fleet)
    return calls


def an_alert(
    *,
    status: str = "firing",
    fingerprint: str = "3f2a1b0c9d8e7f60",
    fleet: str = "prod",
    starts_at: str = "2026-11-18T10:42:00Z",
    ends_at: str = "0001-01-01T00:00:00Z",
    **labels: str,
) -> dict[str, Any]:
    return {
        "status": status,
        "labels": {"alertname": "SloFastBurn", "fleet": fleet, "severity": "page", **labels},
        "annotations": {"summary": "Chat latency: TTFT burning fast"},
        "startsAt": starts_at,
        "endsAt": ends_at,
        "generatorURL": "http://prometheus.example/graph",
        "fingerprint": fingerprint,
    }


def a_payload(*alerts: dict[str, Any]) -> bytes:
    alerts = alerts or (an_alert(),)
    return json.dumps(
        {
            "version": "4",
            "groupKey": '{}:{alertname="SloFastBurn"}',
            "truncatedAlerts": 0,
            "status": alerts[0]["status"],
            "receiver": "fleetscope",
            "groupLabels": {"alertname": "SloFastBurn"},
            "commonLabels": {},
            "commonAnnotations": {},
            "externalURL": "http://alertmanager.example",
            "alerts": list(alerts),
        }
    ).encode()
