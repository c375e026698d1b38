"""Filling the embedded store from a fleetsim history, for benchmarks/overview.py.

Each simulated scrape cycle lands the way a real one does: through
`inventory.services.cycle_record`, one transaction per cycle. A new layout is
rendered and strictly parsed for real (its layout blob and inventory come from
that parse); later cycles with the same series map the simulator's samples onto
it directly, which is what keeps 32 replicas x 6 hours to a few minutes.
"""

from __future__ import annotations

import os
import sys
import time
from array import array
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fleetsim.api import exposition
from fleetsim.families import render_go_style
from fleetsim.history import History

if TYPE_CHECKING:
    from inventory.store import EncodedFrame

STEP_SECONDS = 15.0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class StoreFill:
    """Writes each simulated scrape cycle into the store the way a real cycle lands."""

    def __init__(self, fleet_id: int, targets: list[Any]) -> None:
        from inventory.models import Endpoint

        self.fleet_id = fleet_id
        by_url = {e.url: e for e in Endpoint.objects.filter(fleet_id=fleet_id)}
        self.endpoints = {t.url: by_url[t.url] for t in targets}
        self.shapes: dict[str, tuple[tuple[Any, ...], EncodedFrame, np.ndarray]] = {}
        self.caches: dict[str, Any] = {}
        self.pending: dict[str, Any] = {}  # this cycle's new layouts: (layout, families)
        self.parses = 0

    def _shape(self, url: str, kind: str, families: list[Any], keys: tuple[Any, ...]) -> None:
        """A new layout: render and parse it for real, and map simulator samples onto it."""
        from inventory.exposition import LabelCache, parse
        from inventory.store import LayoutMemo, frame_encode, frame_layout

        body = render_go_style(families).encode() if kind == "dcgm" else exposition(families)
        parsed = parse(body, cache=self.caches.setdefault(url, LabelCache()))
        layout = frame_layout(parsed)
        position = {key: i for i, key in enumerate(keys)}
        take = np.array(
            [position[(name, tuple(sorted(labels.items())))] for name, labels in layout],
            dtype=np.intp,
        )
        encoded = frame_encode(url, parsed, LayoutMemo())
        self.shapes[url] = (keys, encoded, take)
        self.parses += 1
        self.pending[url] = (encoded, parsed)

    def cycle(self, unix: float, scrapes: list[tuple[Any, list[Any] | None]]) -> None:
        from inventory.scraping import ErrorKind, ScrapeFailed, ScrapeOutcome
        from inventory.services import cycle_record
        from inventory.snapshot import inventory_snapshot

        started = datetime.fromtimestamp(unix, UTC)
        self.pending = {}
        results = []
        for target, families in scrapes:
            outcome = ScrapeOutcome(url=target.url, started_at=started, duration_seconds=0.01)
            if families is None:
                outcome.error = ScrapeFailed(ErrorKind.REFUSED, "connection refused")
            else:
                keys = tuple(
                    (fam.name + suffix, tuple(sorted(labels)))
                    for fam in families
                    for suffix, labels, _ in fam.samples
                )
                shape = self.shapes.get(target.url)
                if shape is None or shape[0] != keys:
                    self._shape(target.url, target.kind, families, keys)
                _, encoded, take = self.shapes[target.url]
                values = np.array([v for f in families for _, _, v in f.samples], np.float64)
                outcome.sample_count = len(take)
                if target.url in self.pending:
                    # The parsed payload's own frame, layout included; its values are the
                    # simulator's (the same render).
                    first, parsed = self.pending[target.url]
                    outcome.frame = first
                    outcome.inventory = inventory_snapshot(parsed)
                else:
                    outcome.frame = encoded.same_layout(array("d", values[take].tobytes()))
            results.append((self.endpoints[target.url], outcome))
        cycle_record(self.fleet_id, results)


class RecordedHistory(History):
    """A History whose every step is also handed to `on_step` as OpenMetrics is written."""

    on_step: Callable[[float, list[Any]], None]

    def scrapes(self) -> Iterator[tuple[float, list[Any]]]:
        for unix, scrapes in super().scrapes():
            self.on_step(unix, scrapes)
            yield unix, scrapes


def fill(replicas: int, hours: float, openmetrics: Path | None) -> tuple[Any, datetime]:
    from inventory.models import Fleet
    from inventory.registration import targets_import
    from inventory.targets import TargetSpec

    history = RecordedHistory(replicas=replicas, hours=hours, step=STEP_SECONDS)
    specs = [TargetSpec(t.url, t.kind, {}) for t in history.targets]
    fleet: Fleet = targets_import(fleet_slug=f"bench-{os.getpid()}", specs=specs).fleet
    writer = StoreFill(fleet.pk, history.targets)
    history.on_step = writer.cycle
    started = time.perf_counter()
    if openmetrics is not None:
        history.write_openmetrics(openmetrics)
    else:
        for _ in history.scrapes():
            pass
    log(
        f"history: {len(history.targets)} targets x {history.steps + 1} cycles in "
        f"{time.perf_counter() - started:.0f} s ({writer.parses} layouts parsed)"
    )
    end = datetime.fromtimestamp(history.start + history.steps * history.step, UTC)
    return fleet, end
