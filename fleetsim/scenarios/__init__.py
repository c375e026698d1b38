"""Incidents injected into a fleet at a time, on chosen replicas, with their ground truth.

Each scenario changes the simulation's inputs (traffic, machine knobs, process
lifecycle, the gateway's and the artifact's configuration), never its outputs: the
metrics move because the simulated requests and GPUs behave differently. Intensities
are sized from the affected replicas' own configuration (and, where load matters, the
traffic of the hour they start at) so every scenario shows at any fleet size and time
of day.

The ground truth names each expected signal as the affected replica really exposes
it (its dialect, its process layout, the families it was built without), with
thresholds that follow the physics of the signal; `fleetsim.signals` checks them
against a written history.

Modules: `model` (Signal, Scenario, shared helpers), `traffic`, `batches`, `machine`
and `service` (what each scenario changes), `signals_text` (why each threshold),
`registry` and `triage` (the scenarios), `manifest` (install and naming).
"""

from __future__ import annotations

from fleetsim.scenarios.batches import BATCH_SEQS_SHARE, BatchWaves
from fleetsim.scenarios.machine import (
    DEGRADED_LINK,
    FAILING_LINK_GPUS,
    LINK_RECOVERY_SHARE,
    THROTTLE_HEAT_C,
    THROTTLED_CLOCK,
    THROTTLED_MEMORY,
    XID_NVLINK,
)
from fleetsim.scenarios.manifest import expected_signals, install
from fleetsim.scenarios.model import CATALOG_KEYS, MODEL_LABEL, Scenario, ScenarioError, Signal
from fleetsim.scenarios.registry import SCENARIOS
from fleetsim.scenarios.traffic import (
    BURST_MIN_EXTRA,
    BURST_TOTAL_LOAD,
    KV_OVERSUBSCRIPTION,
    SURGE_PREFILL_SHARE,
    THRASH_ADAPTERS,
    THRASH_LOAD,
    TOKENIZER_UTILIZATION,
)

__all__ = [
    "BATCH_SEQS_SHARE",
    "BURST_MIN_EXTRA",
    "BURST_TOTAL_LOAD",
    "CATALOG_KEYS",
    "DEGRADED_LINK",
    "FAILING_LINK_GPUS",
    "KV_OVERSUBSCRIPTION",
    "LINK_RECOVERY_SHARE",
    "MODEL_LABEL",
    "SCENARIOS",
    "SURGE_PREFILL_SHARE",
    "THRASH_ADAPTERS",
    "THRASH_LOAD",
    "THROTTLED_CLOCK",
    "THROTTLED_MEMORY",
    "THROTTLE_HEAT_C",
    "TOKENIZER_UTILIZATION",
    "XID_NVLINK",
    "BatchWaves",
    "Scenario",
    "ScenarioError",
    "Signal",
    "expected_signals",
    "install",
]
