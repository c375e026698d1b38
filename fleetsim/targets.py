"""Scrape targets: the port convention, Prometheus file_sd, and the run manifest.

With a base port P (non-zero), replica i serves vLLM metrics on P+i and its
DCGM exporter on P+1000+i; the gateway is on P+2000 and the prober on P+2001.
With P = 0 every endpoint gets a free port from the kernel.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetsim.config import NAMESPACE
from fleetsim.fleet import FleetModel

# The host name scrapers use; a container deployment advertises its service name.
HOST = os.environ.get("FLEETSIM_ADVERTISE", "127.0.0.1")
DEFAULT_BASE_PORT = 18000  # the CLI's default: clear of the dashboard's 8000 and Prometheus' 9090
DCGM_OFFSET = 1000
GATEWAY_OFFSET = 2000
PROBER_OFFSET = 2001
MAX_REPLICAS = DCGM_OFFSET
KINDS = ("vllm", "dcgm", "gateway", "prober")
JOBS = {"vllm": "vllm", "dcgm": "dcgm-exporter", "gateway": "fleetscope-gateway",
        "prober": "fleetscope-prober"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Target:
    url: str
    kind: str  # vllm | dcgm | gateway | prober
    labels: dict[str, str] = field(default_factory=dict)
    replica: int | None = None

    @property
    def instance(self) -> str:
        return self.url.split("//", 1)[1].split("/", 1)[0]


@dataclass(frozen=True, slots=True)
class Slot:
    """Where one endpoint listens, before it is bound."""

    kind: str
    replica: int | None
    port: int


def port_plan(replicas: int, base_port: int) -> list[Slot]:
    """Every endpoint of the fleet in a fixed order; port 0 means 'any free port'."""
    if not 1 <= replicas <= MAX_REPLICAS:
        raise ValueError(f"--replicas must be between 1 and {MAX_REPLICAS}, not {replicas}")
    if base_port and not 1024 <= base_port <= 65535 - PROBER_OFFSET:
        raise ValueError(f"--base-port must be 0 or between 1024 and {65535 - PROBER_OFFSET}")

    def port(offset: int) -> int:
        return base_port + offset if base_port else 0

    slots = [Slot("vllm", i, port(i)) for i in range(replicas)]
    slots += [Slot("dcgm", i, port(DCGM_OFFSET + i)) for i in range(replicas)]
    return slots + [
        Slot("gateway", None, port(GATEWAY_OFFSET)),
        Slot("prober", None, port(PROBER_OFFSET)),
    ]


def make_target(fleet: FleetModel, slot: Slot, port: int) -> Target:
    labels = {"job": JOBS[slot.kind]}
    if slot.replica is not None:
        cfg = fleet.configs[slot.replica]
        labels["node"] = cfg.node
        if slot.kind == "vllm":
            labels |= {"namespace": NAMESPACE, "pod": cfg.pod}
    return Target(f"http://{HOST}:{port}/metrics", slot.kind, labels, slot.replica)


def file_sd(targets: list[Target]) -> list[dict[str, Any]]:
    return [{"targets": [t.instance], "labels": dict(t.labels)} for t in targets]


def write_json(path: str | Path, data: Any) -> None:
    """Write the whole file or nothing: a reader (Prometheus' file_sd watcher) never sees
    half of one, because the text is written beside it and renamed over it."""
    path = Path(path)
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def complete_manifest(
    fleet: FleetModel, truth: dict[str, Any], targets: list[Target], **run: Any
) -> dict[str, Any]:
    """The ground truth plus what tests need to find it: wall-clock window and endpoints."""
    window = truth["window"]
    by_replica: dict[int, dict[str, str]] = {}
    for t in targets:
        if t.replica is not None:
            by_replica.setdefault(t.replica, {})[t.kind] = t.instance
    replicas = []
    for cfg in fleet.configs:
        replicas.append(
            {
                "index": cfg.index,
                "pod": cfg.pod,
                "namespace": NAMESPACE,
                "node": cfg.node,
                "model_name": cfg.model.served_name,
                "gpu": cfg.gpu.product,
                "tensor_parallel_size": cfg.tp,
                "data_parallel_size": cfg.dp,
                "max_model_len": cfg.max_model_len,
                "dialect": cfg.dialect,
                "gpu_uuids": [g.uuid for g in cfg.gpus],
                "instances": by_replica.get(cfg.index, {}),
            }
        )
    dialects = truth.get("incident_dialects", {})
    affected = [
        {**replicas[i], "incident_dialect": dialects.get(i, replicas[i]["dialect"])}
        for i in truth["affected"]
    ]
    tenants: dict[str, dict[str, list[str]]] = {}
    for stream in fleet.streams:
        d = stream.demand
        if d.adapters:
            known = tenants.setdefault(d.tenant, {}).setdefault(d.model, [])
            known += [a for a in d.adapters if a not in known]
    return {
        "incident": truth["incident"],
        "description": truth["description"],
        "expected_triage_branch": truth["expected_triage_branch"],
        "window": {
            **window,
            "start": fleet.unix(window["start_offset_s"]),
            "end": fleet.unix(window["end_offset_s"]),
        },
        "affected_replicas": affected,
        "expected_signals": truth["expected_signals"],
        "unobservable_signals": truth.get("unobservable_signals", []),
        "fleet_start": fleet.unix(0.0),
        "run": run,
        "replicas": replicas,
        "targets": [
            {"kind": t.kind, "url": t.url, "instance": t.instance, "labels": t.labels}
            for t in targets
        ],
        "lora_adapters_by_tenant": tenants,
        # Families replicas were built without (`hide`): a check that needs one of them
        # there has insufficient evidence, not a healthy reading.
        "hidden_families": hidden_run(fleet),
    }


def hidden_run(fleet: FleetModel) -> dict[str, list[str]]:
    """The fleet's `hide` option as the manifest records it: replica index -> family names."""
    return {str(i): list(names) for i, names in sorted(fleet.hide.items())}
