"""Histories for the import tests: fleetsim scenarios written as a file, what each target
served, and what the store and the models hold after an import."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleetsim.families import format_value
from fleetsim.history import History
from inventory.models import Endpoint, EndpointInventory, Fleet, ScrapeRun
from inventory.store import frames_in_window

# A fixed end, so every run (and a second History for the truth) has the same grid.
END = 1_794_999_990.0  # on the 15 s grid, as History keeps it
STEP = 15.0
DOWN = {"replicas": 2, "scenario": "replica-down", "hours": 0.25, "at": 300.0, "duration": 240.0}
RESTART = {"replicas": 2, "scenario": "cold-restart", "hours": 0.5, "at": 300.0, "duration": 600.0}

Truth = dict[tuple[str, float], dict[tuple[str, frozenset[tuple[str, str]]], float] | None]


def truth(options: dict[str, Any], **more: Any) -> Truth:
    """What each target served at each step: {(instance, unix): {(name, labels): value}}
    without `_created` (the store skips it), or None when it was down."""
    history = History(**options, end=END, step=STEP, **more)
    out: Truth = {}
    for unix, scrapes in history.scrapes():
        for target, families in scrapes:
            out[(target.instance, unix)] = (
                None
                if families is None
                else {
                    (fam.name + suffix, frozenset(labels)): float(format_value(value))
                    for fam in families
                    for suffix, labels, value in fam.samples
                    if suffix != "_created"
                }
            )
    return out


def write(path: Path, options: dict[str, Any], **more: Any) -> Path:
    History(**options, end=END, step=STEP, **more).write_openmetrics(path)
    return path


def stored(
    fleet: Fleet,
) -> dict[tuple[str, float], dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    """Every stored frame of the fleet: {(instance, unix): {(name, labels): value}}."""
    endpoints = {e.pk: e.instance for e in Endpoint.objects.filter(fleet=fleet)}
    start, end = datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
    return {
        (endpoints[frame.endpoint_id], frame.at.timestamp()): {
            (name, frozenset(labels.items())): value
            for (name, labels), value in zip(frame.layout, frame.values, strict=True)
        }
        for frame in frames_in_window(endpoint_ids=list(endpoints), start=start, end=end)
    }


def rows() -> tuple[int, ...]:
    """Every row an import writes, counted through the models and the store's face."""
    ids = list(Endpoint.objects.values_list("pk", flat=True))
    start, end = datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
    frames = sum(1 for _ in frames_in_window(endpoint_ids=ids, start=start, end=end))
    return (
        Fleet.objects.count(),
        Endpoint.objects.count(),
        ScrapeRun.objects.count(),
        EndpointInventory.objects.count(),
        frames,
    )


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def assert_stored_as_served(fleet: Fleet, expected: Truth) -> None:
    got = stored(fleet)
    served = {key: samples for key, samples in expected.items() if samples is not None}
    assert got.keys() == served.keys()
    for key, samples in served.items():
        frame = got[key]
        assert frame.keys() == samples.keys(), key
        assert all(same(frame[s], samples[s]) for s in samples), key


# A small history written out by hand, with the labels and series Prometheus adds to scrapes.

ADDED = 'instance="127.0.0.1:18500",job="vllm",zone="a"'
SMALL = f"""# TYPE up gauge
up{{{ADDED}}} 1 1000
up{{{ADDED}}} 0 1015
up{{{ADDED}}} 1 1030
# TYPE scrape_duration_seconds gauge
scrape_duration_seconds{{{ADDED}}} 0.25 1000
scrape_duration_seconds{{{ADDED}}} 10 1015
scrape_duration_seconds{{{ADDED}}} 0.5 1030
# TYPE vllm:num_requests_running gauge
# HELP vllm:num_requests_running Number of requests in "model execution" batches.
vllm:num_requests_running{{model_name="m",{ADDED}}} 3 1000
vllm:num_requests_running{{model_name="m",{ADDED}}} 4 1030
# TYPE jobs counter
# HELP jobs Jobs done.
jobs_total{{exported_job="batch",{ADDED}}} 5 1000
jobs_created{{exported_job="batch",{ADDED}}} 900 1000
jobs_total{{exported_job="batch",{ADDED}}} 1 1030
jobs_created{{exported_job="batch",{ADDED}}} 1020 1030
# EOF
"""
