"""Installing a scenario into a fleet and naming its ground truth the way each affected
replica really exposes it."""

from __future__ import annotations

import json
from typing import Any

from fleetsim.dialects import exposed_name
from fleetsim.fleet import FleetModel
from fleetsim.replica import Replica
from fleetsim.scenarios.model import CATALOG_KEYS, MODEL_LABEL, Scenario, ScenarioError, Signal
from fleetsim.scenarios.registry import SCENARIOS


def expected_signals(
    fleet: FleetModel, scenario: Scenario, targets: list[int]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(signals, unobservable) of the manifest, named as each affected replica exposes them.

    Replicas that expose a signal under the same name share one entry (`replicas` lists
    them) unless the signal must move on `each`; a replica that exposes nothing like it
    is listed under `unobservable`. A `model`-scoped signal is checked on every replica
    of the affected replicas' model.
    """
    entries: dict[str, dict[str, Any]] = {}
    missing: dict[str, dict[str, Any]] = {}
    for i in targets:
        replica = fleet.replicas[i]
        cfg = replica.cfg
        if scenario.signals_of is not None:
            signals, dialect = scenario.signals_of(cfg.dialect), None
        else:
            signals, dialect = scenario.signals, scenario.incident_dialect(cfg.dialect)
        for signal in signals:
            scope = [i]
            if signal.scope == "model":
                scope = [r.index for r in fleet.replicas_of(cfg.model.served_name)]
            for j in scope:
                # A peer of the model is named as it exposes the signal (its own dialect).
                own = dialect if j == i or dialect is None else None
                if own is None and dialect is not None:
                    own = scenario.incident_dialect(fleet.replicas[j].cfg.dialect)
                for entry in _resolve(signal, own, fleet, fleet.replicas[j]):
                    if entry.get("unobservable"):
                        slot = missing.setdefault(entry["key"], {**entry, "replicas": []})
                    else:
                        key = json.dumps(entry, sort_keys=True) + (f"#{i}" if signal.each else "")
                        slot = entries.setdefault(key, {**entry, "replicas": []})
                    if j not in slot["replicas"]:
                        slot["replicas"].append(j)
    return list(entries.values()), list(missing.values())


def _resolve(
    signal: Signal, dialect: str | None, fleet: FleetModel, replica: Replica
) -> list[dict[str, Any]]:
    """One manifest entry per checked series set: the signal as this replica exposes it."""
    multiprocess = replica.multiprocess
    metric: str | None = signal.metric
    denominator = signal.denominator
    if dialect is not None:
        metric = exposed_name(signal.metric, dialect, multiprocess=multiprocess)
        if denominator is not None:
            denominator = exposed_name(denominator, dialect, multiprocess=multiprocess)
        if metric is None or (signal.denominator is not None and denominator is None):
            if signal.instead is not None:
                return _resolve(signal.instead, dialect, fleet, replica)
            layout = f"{dialect} with --dp {replica.cfg.dp}" if multiprocess else dialect
            why = f"{layout} does not expose {signal.metric} or a like metric"
            return [{"key": signal.metric, "unobservable": True, "why": why}]
    assert metric is not None
    on_replica = signal.scope in ("affected", "model")
    if on_replica and any(
        n is not None and fleet.hides(replica.index, n) for n in (metric, denominator)
    ):
        if signal.instead is not None:
            return _resolve(signal.instead, dialect, fleet, replica)
        why = f"replica {replica.index} is built without {metric} (hidden)"
        return [{"key": signal.metric, "unobservable": True, "why": why}]
    model = replica.cfg.model.served_name
    entry: dict[str, Any] = {
        "metric": metric,
        "key": signal.metric,
        "catalog_key": CATALOG_KEYS.get(metric),
        "kind": signal.kind,
        "direction": signal.direction,
        "rel": signal.rel,
        "delta": signal.delta,
        "why": signal.why,
        "scope": signal.scope,
        "labels": {k: model if v == MODEL_LABEL else v for k, v in signal.labels.items()},
        "denominator": denominator,
        "within_s": signal.within_s,
        "peak": signal.peak,
        "aggregate": signal.aggregate,
    }
    if not signal.gpus:
        return [entry]
    gpus = replica.cfg.gpus
    return [{**entry, "labels": {**entry["labels"], "UUID": gpus[pos].uuid}}
            for pos in signal.gpus if pos < len(gpus)]  # fmt: skip


def install(
    fleet: FleetModel,
    name: str,
    *,
    at: float,
    duration: float | None = None,
    targets: list[int] | None = None,
) -> dict[str, Any]:
    """Inject scenario `name` into the fleet; returns its ground truth (without endpoints)."""
    if name not in SCENARIOS:
        raise ScenarioError(f"unknown scenario {name!r} (choose from {', '.join(SCENARIOS)})")
    scenario = SCENARIOS[name]
    duration = scenario.duration_s if duration is None else duration
    if at < 0 or duration <= 0:
        raise ScenarioError(f"--at must be >= 0 and --duration > 0 (got {at:g} and {duration:g})")
    chosen = scenario.default_targets(fleet) if targets is None else list(targets)
    for i in chosen:
        if not 0 <= i < len(fleet.replicas):
            raise ScenarioError(
                f"replica {i} does not exist (the fleet has 0..{len(fleet.replicas) - 1})"
            )
    scenario.check_targets(fleet, chosen)
    signals, unobservable = expected_signals(fleet, scenario, chosen)
    scenario.apply(fleet, chosen, at, duration)
    return {
        "incident": name,
        "description": scenario.description,
        "expected_triage_branch": scenario.branch,
        "window": {"start_offset_s": at, "end_offset_s": at + duration},
        "affected": chosen,
        "incident_dialects": {
            i: scenario.incident_dialect(fleet.replicas[i].cfg.dialect) for i in chosen
        },
        "expected_signals": signals,
        "unobservable_signals": unobservable,
    }
