"""From a recorded history's lines to scrapes, as the scraper would have reported them.

`history_read(path)` reads and checks a whole file (`inventory.history.reading`) and
returns what each target's scrapes were, ready for `inventory.services.cycle_record`: an
outcome per target and timestamp (a failed one where `up` was 0, else the encoded frame,
with the inventory when the layout is new), grouped into one cycle per timestamp. It
writes nothing; `inventory.history.history_import` writes it. Any fault raises
`HistoryError` naming the line, before anything could be written.

What Prometheus added is taken off again. Each target is its `instance`; the labels of
its `up` series are exactly the labels Prometheus gave that target (job, instance, the
service-discovery labels), so they are stripped from every sample of the target (and
an `exported_<name>` label, Prometheus' rename of an exposed label that clashed, gets
its name back). `up` and the `scrape_*` series Prometheus writes with the target's
labels alone are not part of what the endpoint exposed.

One scrape is rebuilt as the text-format payload (0.0.4) the endpoint served (families
in file order, `_created` samples as prometheus_client writes them, the file's HELP and
TYPE) and parsed by the strict parser with the target's LabelCache, as a live scrape of
it is; that parse gives the layout, the inventory (types, help, buckets) and any error.
A later scrape of the same series in the same order re-uses that parse: its values
(checked as OpenMetrics values when the line was read) go straight into the layout
(`EncodedFrame.same_layout`). `parse_every_scrape=True` parses every scrape in full
instead (the benchmark's baseline, and the tests' cross-check of the shortcut).
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from inventory.exposition import ExpositionError, Family, LabelCache, parse
from inventory.history.reading import (
    UP,
    Block,
    FileTarget,
    HistoryError,
    LineReader,
    ScrapeSamples,
    excerpt,
)
from inventory.models import EndpointKind
from inventory.scraping import ErrorKind, ScrapeFailed, ScrapeOutcome
from inventory.snapshot import InventorySnapshot, inventory_snapshot
from inventory.store import EncodedFrame, LayoutMemo, Series, frame_encode, frame_layout
from inventory.targets import kind_from_job

UP_DOWN_REASON = "up=0 in the imported history"
KINDS = frozenset(EndpointKind.values)
_OM_HELP_ESCAPE = re.compile(r"\\(.)")
_CREATED_PARENTS = frozenset({"counter", "histogram", "summary"})
# OpenMetrics types as the text format spells them; None: no TYPE line (samples are untyped).
_TEXT_TYPES = {
    "counter": "counter",
    "gauge": "gauge",
    "histogram": "histogram",
    "summary": "summary",
    "unknown": "untyped",
    "info": "gauge",
    "stateset": "gauge",
    "gaugehistogram": None,
}


@dataclass(frozen=True)
class HistoryTarget:
    """A target of the history, as it is registered: its URL, kind and labels."""

    instance: str
    url: str
    kind: str
    labels: dict[str, str]


@dataclass(frozen=True)
class HistoryCycle:
    """The scrapes of one timestamp: (target URL, outcome) in the file's target order."""

    at: datetime
    scrapes: tuple[tuple[str, ScrapeOutcome], ...]


@dataclass(frozen=True)
class HistoryContent:
    targets: tuple[HistoryTarget, ...]
    cycles: tuple[HistoryCycle, ...]
    lines: int
    scrapes: int
    failed: int
    samples: int
    parses: int  # scrapes parsed in full (a layout not seen before, or every one)


def history_read(path: str | Path, *, parse_every_scrape: bool = False) -> HistoryContent:
    """Read and check the whole history at `path`; HistoryError on any fault."""
    reader = LineReader(Path(path))
    reader.read()
    return _content(reader, parse_every_scrape)


def _content(reader: LineReader, parse_every_scrape: bool) -> HistoryContent:
    """Every target's scrapes, grouped by timestamp into cycles."""
    targets = [_registered(target) for target in reader.targets.values()]
    by_time: dict[float, list[tuple[str, ScrapeOutcome]]] = {}
    scrapes = failed = samples = parses = 0
    for target, registered in zip(reader.targets.values(), targets, strict=True):
        scraper = _TargetScrapes(reader, target, registered.url, parse_every_scrape)
        for at, outcome in scraper.outcomes():
            by_time.setdefault(at, []).append((registered.url, outcome))
            scrapes += 1
            failed += not outcome.ok
            samples += outcome.sample_count
        parses += scraper.parses
    cycles = tuple(HistoryCycle(_datetime(at), tuple(by_time[at])) for at in sorted(by_time))
    return HistoryContent(tuple(targets), cycles, reader.lines, scrapes, failed, samples, parses)


def _registered(target: FileTarget) -> HistoryTarget:
    """The target as it is registered, from the labels of its `up` series."""
    up = target.up
    if up is None:
        raise HistoryError(
            f"instance {excerpt(target.instance)} has no up series, so the labels "
            "Prometheus added to its samples are unknown",
            target.line,
        )
    labels = {name: _unescape(value) for name, value in up.pairs}
    kind = labels.pop("kind", None)
    if kind is None:
        kind = kind_from_job(labels.get("job", ""))
    elif kind not in KINDS:
        raise HistoryError(
            f"instance {excerpt(target.instance)}: kind must be one of {', '.join(sorted(KINDS))}",
            up.line,
        )
    instance = labels["instance"]
    return HistoryTarget(instance, f"http://{instance}/metrics", kind, labels)


@dataclass
class _Plan:
    """What the parse of one series order gave: the frame layout, where each of its
    values is among the scrape's samples, the full frame (layout blob included), and the
    inventory."""

    layout: tuple[Series, ...]
    take: np.ndarray
    full: EncodedFrame
    inventory: InventorySnapshot


class _Payload:
    """A scrape's text-format payload as it is built: its lines, where each came from (a
    file line, or -(k + 1) for the scrape's k-th sample), and the sample order."""

    def __init__(self, values: array[float]) -> None:
        self.values = values
        self.lines: list[str] = []
        self.origins: list[int] = []
        self.order: list[int] = []

    def family(
        self, name: str | None, text_type: str | None, om_help: str | None, meta_line: int
    ) -> None:
        """A family's HELP and TYPE lines (none without a name, no TYPE without a type)."""
        if name is None:
            return
        if om_help is not None:
            self.lines.append(f"# HELP {name} {_text_help(om_help)}")
            self.origins.append(meta_line)
        if text_type is not None:
            self.lines.append(f"# TYPE {name} {text_type}")
            self.origins.append(meta_line)

    def samples(self, indexes: list[int], texts: list[str]) -> None:
        for k, text in zip(indexes, texts, strict=True):
            self.lines.append(f"{text} {_text_value(self.values[k])}")
            self.origins.append(-(k + 1))
            self.order.append(k)


class _TargetScrapes:
    """One target's scrapes, in time order, as the scraper would have reported them."""

    def __init__(self, reader: LineReader, target: FileTarget, url: str, parse_all: bool) -> None:
        self.reader = reader
        self.target = target
        self.url = url
        self.parse_all = parse_all
        self.memo = LayoutMemo()
        self.cache = LabelCache()
        self.plans: dict[bytes, _Plan] = {}
        self.parses = 0
        up = target.up
        assert up is not None  # _registered checked it
        self.kept = {name: value for name, value in up.pairs}  # the target labels, as written
        self.texts: dict[int, str] = {}  # series id -> its series text without them

    def outcomes(self) -> Iterator[tuple[float, ScrapeOutcome]]:
        target = self.target
        self._check_scrape_series()
        ups = target.scrape_series.get(UP, {})
        durations = target.scrape_series.get("scrape_duration_seconds", {})
        for at in sorted(ups.keys() | target.buckets.keys()):
            bucket = target.buckets.pop(at, None)
            up = ups.get(at)
            if up is None:
                assert bucket is not None  # the time came from one of the two
                raise HistoryError(
                    f"instance {excerpt(target.instance)} has samples at {_iso(at)} but no up "
                    "sample then",
                    bucket.line,
                )
            value, up_line = up
            if value not in (0.0, 1.0):
                raise HistoryError(f"up must be 0 or 1, not {value!r}", up_line)
            duration = durations.get(at, (0.0, 0))[0]
            outcome = ScrapeOutcome(url=self.url, started_at=_datetime(at))
            outcome.duration_seconds = duration if math.isfinite(duration) else 0.0
            if value == 0.0:
                if bucket is not None:
                    raise HistoryError(
                        f"instance {excerpt(target.instance)} has samples at {_iso(at)}, when "
                        "its up is 0 (a failed scrape has none)",
                        bucket.line,
                    )
                outcome.error = ScrapeFailed(ErrorKind.CONNECTION, UP_DOWN_REASON)
            else:
                self._frame(at, bucket or ScrapeSamples(up_line), outcome)
            yield at, outcome

    def _check_scrape_series(self) -> None:
        up = self.target.up
        assert up is not None
        for series in self.target.series:
            if series.scrape_series and series.pairs != up.pairs:
                raise HistoryError(
                    f"{series.name} is a series Prometheus writes with the target's labels "
                    f"alone (those of its up series, line {up.line}); this one has others",
                    series.line,
                )

    def _frame(self, at: float, bucket: ScrapeSamples, outcome: ScrapeOutcome) -> None:
        key = bucket.ids.tobytes()
        plan = self.plans.get(key)
        if plan is None or self.parse_all:
            plan, frame = self._parse(at, bucket)
            self.plans.setdefault(key, plan)
        else:
            values = np.frombuffer(bucket.values, dtype=np.float64)[plan.take]
            frame = plan.full.same_layout(array("d", values.tobytes()))
        # As the scraper reports it: the layout (and the inventory) only when it is new
        # among the target's recent ones.
        _, changed = self.memo.digest(self.url, plan.layout)
        outcome.frame = replace(frame, layout_blob=plan.full.layout_blob if changed else None)
        outcome.inventory = plan.inventory if changed else None
        outcome.sample_count = len(bucket.ids)

    def _parse(self, at: float, bucket: ScrapeSamples) -> tuple[_Plan, EncodedFrame]:
        """Rebuild the payload the target served, and parse it as a live scrape is."""
        self.parses += 1
        body, origins, order = self._payload(bucket)
        try:
            families = parse(body, cache=self.cache)
        except ExpositionError as exc:
            origin = origins[min(max(exc.line, 1), len(origins)) - 1] if origins else 0
            line = origin if origin > 0 else self._locate(at, -origin - 1)
            raise HistoryError(
                f"{exc.message} (in the scrape of {excerpt(self.target.instance)} at {_iso(at)})",
                line,
            ) from None
        full = frame_encode(self.url, families, LayoutMemo())
        layout = frame_layout(families)
        take = np.array(_positions(families, layout, order), dtype=np.intp)
        return _Plan(layout, take, full, inventory_snapshot(families)), full

    def _payload(self, bucket: ScrapeSamples) -> tuple[str, list[int], list[int]]:
        """The text-format payload of a scrape; per payload line where it came from (a
        file line number, or -(k + 1) for the scrape's k-th sample); and per sample line
        of the payload, its index among the scrape's samples."""
        by_id = self.reader.by_id
        payload = _Payload(bucket.values)
        ids = bucket.ids
        start = 0
        while start < len(ids):
            block = by_id[ids[start]].block
            end = start
            while end < len(ids) and by_id[ids[end]].block is block:
                end += 1
            self._family(payload, block, range(start, end), ids)
            start = end
        lines = payload.lines
        return "\n".join(lines) + "\n" if lines else "", payload.origins, payload.order

    def _family(self, payload: _Payload, block: Block, run: range, ids: array[int]) -> None:
        by_id = self.reader.by_id
        name = block.name
        type_ = block.type
        created_name = f"{name}_created" if type_ in _CREATED_PARENTS else None
        main = [k for k in run if by_id[ids[k]].name != created_name]
        created = [k for k in run if by_id[ids[k]].name == created_name]
        meta_line = block.meta_lines[0] if block.meta_lines else block.line
        text_name = text_type = None
        if name is not None and type_ is not None and _TEXT_TYPES.get(type_):
            text_name, text_type = name, _TEXT_TYPES[type_]
            if type_ == "counter" and any(by_id[ids[k]].name == f"{name}_total" for k in main):
                text_name = f"{name}_total"
            elif type_ == "info":
                text_name = f"{name}_info"
        elif name is not None and block.help is not None and type_ is None:
            text_name = name  # untyped: its HELP alone
        payload.family(text_name, text_type, block.help, meta_line)
        payload.samples(main, [self._text(ids[k]) for k in main])
        if created:
            # prometheus_client writes `_created` as a gauge family after its parent.
            payload.family(created_name, "gauge", block.help, meta_line)
            payload.samples(created, [self._text(ids[k]) for k in created])

    def _text(self, series_id: int) -> str:
        """The series as the endpoint exposed it: the target's labels taken off."""
        text = self.texts.get(series_id)
        if text is None:
            series = self.reader.by_id[series_id]
            kept = self.kept
            pairs = [
                (name, value)
                for name, value in series.pairs
                if kept.get(name) != value  # honor_labels kept an exposed value: keep it
            ]
            names = {name for name, _ in pairs}
            pairs = [
                (name[9:], value)
                if name.startswith("exported_") and name[9:] in kept and name[9:] not in names
                else (name, value)
                for name, value in pairs
            ]
            inner = ",".join(f'{name}="{value}"' for name, value in pairs)
            text = self.texts[series_id] = f"{series.name}{{{inner}}}" if inner else series.name
        return text

    def _locate(self, at: float, k: int) -> int:
        """The file line of this target's k-th sample at `at` (for an error message)."""
        seen = 0
        target = self.target
        for first, lines in self.reader.chunks():
            for offset, line in enumerate(lines):
                if not line or line[0] == "#":
                    continue
                head, _, stamp = line.rpartition(" ")
                series = self.reader.series.get(head.rpartition(" ")[0])
                if (
                    series is not None
                    and series.target is target
                    and not series.scrape_series
                    and self.reader.times.get(stamp) == at
                ):
                    if seen == k:
                        return first + offset
                    seen += 1
        return target.line


def _positions(families: list[Family], layout: tuple[Series, ...], order: list[int]) -> list[int]:
    """For each series of the frame layout, its index among the scrape's samples.

    The parser keeps the payload's sample order (families in order, each family's
    samples in order), so its samples, in order, are the payload's sample lines; the
    layout is those samples less the ones the store skips (`_created`)."""
    samples = [sample for family in families for sample in family.samples]
    if len(samples) != len(order):
        raise RuntimeError(  # pragma: no cover - the parser returns every sample line
            f"the parser returned {len(samples)} samples for {len(order)} sample lines"
        )
    positions: list[int] = []
    k = 0
    for j, sample in enumerate(samples):
        if k < len(layout) and layout[k][0] is sample.name and layout[k][1] is sample.labels:
            positions.append(order[j])
            k += 1
    if k != len(layout):
        raise RuntimeError(  # pragma: no cover - the layout is a subsequence of the samples
            "the frame layout is not a subsequence of the parsed samples"
        )
    return positions


def _text_value(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def _text_help(om_help: str) -> str:
    """OpenMetrics HELP escapes (\\\\, \\n, \\") as the text format's (\\\\, \\n)."""
    return _OM_HELP_ESCAPE.sub(lambda m: '"' if m.group(1) == '"' else m.group(0), om_help)


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def _datetime(at: float) -> datetime:
    return datetime.fromtimestamp(at, UTC)


def _iso(at: float) -> str:
    return _datetime(at).strftime("%Y-%m-%dT%H:%M:%SZ")
