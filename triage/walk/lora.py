"""LoRA slot waits on vLLM before 0.11, which has no `waiting_by_reason`: read from the
history of `vllm:lora_requests_info` label values in the embedded store."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from inventory.models import Fleet

LORA_INFO = "vllm:lora_requests_info"


def _adapters(text: str | None) -> set[str]:
    return {a for a in (text or "").split(",") if a}


def _slot_wait(labels: Mapping[str, str]) -> bool:
    """An adapter waits for a slot, not merely in the queue: every slot is taken and a
    waiting adapter is not among the running ones (a queue of requests for loaded
    adapters is load, not LoRA churn)."""
    running = _adapters(labels.get("running_lora_adapters"))
    waiting = _adapters(labels.get("waiting_lora_adapters"))
    try:
        slots = int(float(labels.get("max_lora", "")))
    except ValueError:
        return False
    return len(running) >= slots > 0 and bool(waiting - running)


def lora_wait_shares(
    fleet: Fleet,
    instances: Collection[str],
    window: tuple[datetime, datetime],
    baseline: tuple[datetime, datetime],
) -> dict[str, tuple[float | None, float | None]]:
    """For each replica that has `vllm:lora_requests_info`, the share of the window's and of
    the baseline's scrapes in which an adapter waits for a slot (window, baseline). The
    adapters are label values, so this reads the store's layouts over time."""
    from inventory.selectors import scope_endpoints
    from inventory.store import layout_runs

    ids = {
        e.endpoint_id: e.instance for e in scope_endpoints(fleet=fleet) if e.instance in instances
    }
    runs = layout_runs(endpoint_ids=list(ids), start=baseline[0], end=window[1])
    shares: dict[str, tuple[float | None, float | None]] = {}
    for endpoint_id, spans in runs.items():
        counts = {"window": [0, 0], "baseline": [0, 0]}
        lora = False
        for run in spans:
            waiting = False
            for name, labels in run.series:
                if name.startswith(LORA_INFO):
                    lora = True
                    waiting = waiting or _slot_wait(labels)
            part = "window" if run.first_at >= window[0] else "baseline"
            counts[part][0] += run.frames * waiting
            counts[part][1] += run.frames
        if lora:
            now, before = counts["window"], counts["baseline"]
            shares[ids[endpoint_id]] = (
                now[0] / now[1] if now[1] else None,
                before[0] / before[1] if before[1] else None,
            )
    return shares
