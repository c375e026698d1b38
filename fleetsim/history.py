"""A fleet's past as Prometheus would have stored it: OpenMetrics with timestamps.

Every sample carries the labels Prometheus adds when scraping (job, instance and
the file_sd target labels) and every target gets an `up` series, so a backfilled
history answers the same queries as a live scrape. Families are written whole
(OpenMetrics forbids interleaving them), each through its own spill file, so
memory stays flat however long the history is.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from fleetsim.config import check_options
from fleetsim.families import Family, Labels, escape, format_value
from fleetsim.fleet import FleetModel
from fleetsim.scenarios import install
from fleetsim.targets import (
    DEFAULT_BASE_PORT,
    Target,
    complete_manifest,
    hidden_run,
    make_target,
    port_plan,
)

SERIES_HELP_UP = "1 if the target was scraped successfully, 0 otherwise."


class History:
    """A simulated fleet stepped through time on a fixed scrape grid."""

    def __init__(
        self,
        *,
        replicas: int,
        scenario: str = "steady",
        hours: float = 1.0,
        step: float = 15.0,
        at: float | None = None,
        duration: float | None = None,
        targets: list[int] | None = None,
        dialect: str = "current",
        dialect_of: Mapping[int, str] | None = None,
        dp: int = 1,
        seed: int = 0,
        end: float | None = None,
        base_port: int = DEFAULT_BASE_PORT,
        hide: Mapping[int, Iterable[str]] | None = None,
    ) -> None:
        check_options(replicas=replicas, dialect=dialect, dp=dp, dialect_of=dialect_of)
        if not step > 0 or not hours > 0:
            raise ValueError("--hours and --step must be positive")
        span = hours * 3600.0
        end = math.floor((time.time() if end is None else end) / step) * step
        self.start = end - span
        self.step = step
        self.steps = int(span // step)
        self.next_step = 0  # the first step not yet written: a history can be written in parts
        self._part_end: int | None = None
        self.model = FleetModel(
            replicas=replicas,
            dialect=dialect,
            dialect_of=dialect_of,
            dp=dp,
            seed=seed,
            epoch=self.start,
            hide=hide,
        )
        at = span / 2 if at is None else at
        truth = install(self.model, scenario, at=at, duration=duration, targets=targets)
        self.targets: list[Target] = [
            make_target(self.model, slot, slot.port) for slot in port_plan(replicas, base_port)
        ]
        run = {"replicas": replicas, "scenario": scenario, "at": at, "dialect": dialect,
               "dialect_of": {str(i): d for i, d in sorted((dialect_of or {}).items())},
               "dp": dp, "seed": seed, "hours": hours, "step": step,
               "hide": hidden_run(self.model)}  # fmt: skip
        self.truth = truth
        self.run = run
        self.manifest = complete_manifest(self.model, truth, self.targets, **run)

    @property
    def end(self) -> float:
        """The unix time of the last step."""
        return self.start + self.steps * self.step

    @property
    def done(self) -> bool:
        return self.next_step > self.steps

    def extend_to(self, end: float) -> None:
        """Add the steps up to `end` (on the same grid): a history written up to its end can
        go on to the time it took to write it."""
        last = math.floor(end / self.step) * self.step
        self.steps = max(self.steps, int(round((last - self.start) / self.step)))

    def retarget(self, targets: list[Target]) -> None:
        """Scrape labels from `targets` (the same endpoints, in port_plan order, on the
        ports a live fleet bound), so this history and that fleet's scrapes join."""
        if [(t.kind, t.replica) for t in targets] != [(t.kind, t.replica) for t in self.targets]:
            raise ValueError("retarget: not the same endpoints as the history's")
        self.targets = list(targets)
        self.manifest = complete_manifest(self.model, self.truth, self.targets, **self.run)

    def scrapes(self) -> Iterator[tuple[float, list[tuple[Target, list[Family] | None]]]]:
        """(unix time, [(target, families or None when the target is down)]) per step, from
        the first step not yet written to the end, or to the end of the part being written."""
        model = self.model
        stop = self.steps + 1 if self._part_end is None else min(self.steps + 1, self._part_end)
        while self.next_step < stop:
            t = self.next_step * self.step
            model.advance_to(t)
            self.next_step += 1
            yield self.start + t, [(target, self._scrape(target)) for target in self.targets]

    def _scrape(self, target: Target) -> list[Family] | None:
        model, i = self.model, target.replica
        if target.kind == "vllm":
            assert i is not None
            return model.vllm_families(i) if model.replicas[i].up else None
        if target.kind == "dcgm":
            assert i is not None
            return model.dcgm_families(i)
        if target.kind == "gateway":
            return model.gateway_families()
        return model.prober_families()

    def write_openmetrics(self, out: str | Path, *, steps: int | None = None) -> dict[str, Any]:
        """Write the history to `out`: the whole of it, or with `steps` only the next that
        many steps (call again with another file for the next part); returns the manifest."""
        with tempfile.TemporaryDirectory(prefix="fleetsim-history-") as spill:
            writer = _Writer(Path(spill))
            self._part_end = None if steps is None else self.next_step + steps
            try:
                for unix, scrapes in self.scrapes():
                    ts = _format_ts(unix)
                    for target, families in scrapes:
                        labels = target.labels.items()
                        scrape_labels = (("instance", target.instance), *sorted(labels))
                        up = Family("up", "gauge", SERIES_HELP_UP)
                        up.add((), 0.0 if families is None else 1.0)
                        writer.write(up, scrape_labels, ts)
                        for fam in families or ():
                            writer.write(fam, scrape_labels, ts)
            finally:
                self._part_end = None
            writer.finish(Path(out))
        return self.manifest


class _Writer:
    """Buffers each family's lines and spills them to that family's file when large."""

    SPILL_CHARS = 4_000_000

    def __init__(self, spill: Path) -> None:
        self.spill = spill
        self.families: dict[str, _Buffer] = {}
        self.labels: dict[tuple[Labels, Labels], str] = {}

    def write(self, fam: Family, scrape_labels: Labels, ts: str) -> None:
        buf = self.families.get(fam.name)
        if buf is None:
            path = self.spill / f"{len(self.families)}.om"
            buf = self.families[fam.name] = _Buffer(_om_type(fam.type), fam.help, path)
        cache, name = self.labels, fam.name
        lines = []
        for suffix, labels, value in fam.samples:
            text = cache.get((labels, scrape_labels))
            if text is None:
                pairs = ",".join(f'{k}="{escape(v)}"' for k, v in (*labels, *scrape_labels))
                text = cache[(labels, scrape_labels)] = "{" + pairs + "}"
            lines.append(f"{name}{suffix}{text} {format_value(value)} {ts}\n")
        chunk = "".join(lines)
        buf.chunks.append(chunk)
        buf.size += len(chunk)
        if buf.size > self.SPILL_CHARS:
            buf.spill()

    def finish(self, out: Path) -> None:
        with open(out, "w", encoding="utf-8") as dest:
            for name, buf in self.families.items():
                dest.write(f"# TYPE {name} {buf.type}\n# HELP {name} {escape(buf.help)}\n")
                if buf.path.exists():
                    with open(buf.path, encoding="utf-8") as spilled:
                        shutil.copyfileobj(spilled, dest)
                dest.writelines(buf.chunks)
            dest.write("# EOF\n")


class _Buffer:
    __slots__ = ("type", "help", "path", "chunks", "size")

    def __init__(self, type_: str, help_: str, path: Path) -> None:
        self.type = type_
        self.help = help_
        self.path = path
        self.chunks: list[str] = []
        self.size = 0

    def spill(self) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.writelines(self.chunks)
        self.chunks = []
        self.size = 0


def _om_type(type_: str) -> str:
    return type_ if type_ in ("counter", "gauge", "histogram", "summary") else "unknown"


def _format_ts(unix: float) -> str:
    return str(int(unix)) if unix == int(unix) else f"{unix:.3f}"
