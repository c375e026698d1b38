"""Reading a recorded history: OpenMetrics with timestamps, as Prometheus stored it.

`history_read(path)` reads and checks a whole file and returns what each target's
scrapes were, ready for `inventory.services.cycle_record`: an outcome per target and
timestamp (a failed one where `up` was 0, else the encoded frame, with the inventory
when the layout is new), grouped into one cycle per timestamp. It writes nothing;
`inventory.history.history_import` writes it. Any fault raises `HistoryError` naming
the line, before anything could be written.

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

The file: metadata (`# TYPE`, `# HELP`, `# UNIT`) before each family's samples, every
sample with a timestamp, each family's lines contiguous, `# EOF` last. A series' samples
need not be contiguous (fleetsim writes every family scrape by scrape), and targets
need not share timestamps. Exemplars are refused.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import numpy as np

from inventory.exposition import ExpositionError, Family, LabelCache, parse
from inventory.models import EndpointKind
from inventory.scraping import ErrorKind, ScrapeFailed, ScrapeOutcome
from inventory.snapshot import InventorySnapshot, inventory_snapshot
from inventory.store import EncodedFrame, LayoutMemo, Series, frame_encode, frame_layout
from inventory.targets import kind_from_job

UP = "up"
UP_DOWN_REASON = "up=0 in the imported history"
# The series Prometheus' scrape loop writes for every target, with the target's labels alone.
SCRAPE_SERIES = frozenset(
    {
        UP,
        "scrape_duration_seconds",
        "scrape_samples_scraped",
        "scrape_samples_post_metric_relabeling",
        "scrape_series_added",
        "scrape_timeout_seconds",
        "scrape_sample_limit",
        "scrape_body_size_bytes",
    }
)
KINDS = frozenset(EndpointKind.values)
CHUNK_BYTES = 16 * 1024 * 1024
EXCERPT_CHARS = 40

_NUMBER_CHARS = "0123456789.eE+-"
# OpenMetrics spells its special values case-insensitively, and "infinity" too.
_SPECIALS = {"nan": math.nan}
for _word in ("inf", "infinity"):
    _SPECIALS.update({_word: math.inf, "+" + _word: math.inf, "-" + _word: -math.inf})
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
_METADATA = re.compile(r"# (HELP|TYPE|UNIT) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)")
_OM_HELP_ESCAPE = re.compile(r"\\(.)")
_OM_HELP = re.compile(r'(?:[^\\\n]|\\[\\n"])*')
_OM_TYPES = frozenset(
    {"counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary", "unknown"}
)
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


class HistoryError(ValueError):
    """The history cannot be imported; nothing of it was written. `line` is 1-based when
    the fault is on one line of the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line
        self.message = message


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
    reader = _Reader(Path(path))
    reader.read()
    return reader.scrapes(parse_every_scrape=parse_every_scrape)


# Reading the lines.


class _Block:
    """One family's lines in the file: its metadata, then its samples."""

    __slots__ = ("name", "type", "help", "line", "meta_lines", "has_samples")

    def __init__(self, name: str | None, line: int) -> None:
        self.name = name  # None: samples before any metadata
        self.type: str | None = None
        self.help: str | None = None  # as written (OpenMetrics escapes)
        self.line = line
        self.meta_lines: list[int] = []
        self.has_samples = False


class _Series:
    """One distinct series text of the file (`name{labels}`, target labels included)."""

    __slots__ = ("id", "target", "block", "name", "pairs", "line", "scrape_series")

    def __init__(
        self, id_: int, target: _Target, block: _Block, name: str,
        pairs: tuple[tuple[str, str], ...], line: int,
    ) -> None:  # fmt: skip
        self.id = id_
        self.target = target
        self.block = block
        self.name = name
        self.pairs = pairs  # (name, value as written, escapes kept)
        self.line = line
        self.scrape_series = name in SCRAPE_SERIES


class _Bucket:
    """The samples of one target at one timestamp, in file order."""

    __slots__ = ("ids", "values", "line")

    def __init__(self, line: int) -> None:
        self.ids: array[int] = array("i")
        self.values: array[float] = array("d")
        self.line = line


@dataclass
class _Target:
    instance: str  # as written
    line: int
    index: int
    buckets: dict[float, _Bucket] = field(default_factory=dict)
    # Prometheus' own series of this target: name -> {timestamp: (value, line)}
    scrape_series: dict[str, dict[float, tuple[float, int]]] = field(default_factory=dict)
    up: _Series | None = None
    series: list[_Series] = field(default_factory=list)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.series: dict[str, _Series] = {}
        self.by_id: list[_Series] = []
        self.targets: dict[str, _Target] = {}
        self.blocks: list[_Block] = []
        self.block_of: dict[str, _Block] = {}
        self.meta: list[tuple[int, str]] = []  # (line, text) of every metadata line
        self.times: dict[str, float] = {}
        self.lines = 0
        self.eof_line = 0

    # Pass over the file.

    def read(self) -> None:
        block: _Block | None = None
        for first, lines in self._chunks():
            block = self._lines(first, lines, block)
        if not self.eof_line:
            raise HistoryError(
                "missing '# EOF' at the end (required in OpenMetrics)", max(self.lines, 1)
            )
        self._check_metadata()
        if not self.targets:
            raise HistoryError("no samples: there is nothing to import")

    def _chunks(self) -> Iterator[tuple[int, list[str]]]:
        """(number of the first line, lines) per chunk of the file, decoded and checked."""
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise HistoryError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        lineno = 1
        pending = b""
        with handle:
            while True:
                try:
                    chunk = handle.read(CHUNK_BYTES)
                except OSError as exc:
                    raise HistoryError(f"cannot read {self.path}: {exc.strerror or exc}") from None
                if not chunk:
                    break
                data = pending + chunk
                cut = data.rfind(b"\n")
                if cut < 0:
                    pending = data
                    continue
                pending = data[cut + 1 :]
                lines = _decoded(data[:cut], lineno).split("\n")
                yield lineno, lines
                lineno += len(lines)
        if pending:
            yield lineno, _decoded(pending, lineno).split("\n")

    def _lines(self, first: int, lines: list[str], block: _Block | None) -> _Block | None:
        series_get = self.series.get
        times_get = self.times.get
        numbers = _NUMBER_CHARS
        last_target: _Target | None = None
        last_time = ""
        bucket: _Bucket | None = None
        lineno = first - 1
        if self.eof_line and lines:
            raise HistoryError("text after '# EOF'", first)
        if "# EOF" in lines and lines.index("# EOF") != len(lines) - 1:
            raise HistoryError("text after '# EOF'", first + lines.index("# EOF") + 1)
        for line in lines:
            lineno += 1
            if not line or line[0] == "#":
                block = self._comment(line, lineno, block)
                continue
            head, _, stamp = line.rpartition(" ")
            prefix, _, token = head.rpartition(" ")
            series = series_get(prefix)
            if series is None:
                if block is None:
                    block = self._block(None, lineno)
                series = self._new_series(line, prefix, lineno, block)
            elif series.block is not block:
                raise HistoryError(
                    f"series {_excerpt(prefix)} was in the family that began at line "
                    f"{series.block.line}: a family's lines must be contiguous",
                    lineno,
                )
            if token.strip(numbers):
                value = _SPECIALS.get(token.lower())
                if value is None:
                    raise HistoryError(_value_fault(token, line), lineno)
            else:
                try:
                    value = float(token)
                except ValueError:
                    raise HistoryError(_value_fault(token, line), lineno) from None
            at = times_get(stamp)
            if at is None:
                at = self._time(stamp, lineno)
            target = series.target
            if series.scrape_series:
                target.scrape_series.setdefault(series.name, {})[at] = (value, lineno)
                continue
            if target is not last_target or stamp != last_time or bucket is None:
                bucket = target.buckets.get(at)
                if bucket is None:
                    bucket = target.buckets[at] = _Bucket(lineno)
                last_target, last_time = target, stamp
            bucket.ids.append(series.id)
            bucket.values.append(value)
        self.lines = lineno
        return block

    def _comment(self, line: str, lineno: int, block: _Block | None) -> _Block | None:
        if line == "# EOF":
            self.eof_line = lineno
            return block
        if not line:
            raise HistoryError("blank line (not allowed in OpenMetrics)", lineno)
        match = _METADATA.fullmatch(line)
        if match is None:
            if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")):
                raise HistoryError(
                    f"malformed metadata line {_excerpt(line)}: expected '# KIND <name> <text>'",
                    lineno,
                )
            raise HistoryError(
                f"comment lines are not allowed in OpenMetrics: {_excerpt(line)}", lineno
            )
        kind, name, value = match.groups()
        if kind == "TYPE" and value not in _OM_TYPES:
            raise HistoryError(
                f"unknown metric type {_excerpt(value)} for {_excerpt(name)}", lineno
            )
        if kind == "HELP" and _OM_HELP.fullmatch(value) is None:
            raise HistoryError(f"invalid escape in the HELP text of {_excerpt(name)}", lineno)
        if block is None or block.name != name:
            block = self._block(name, lineno)
        elif block.has_samples:
            raise HistoryError(f"{kind} line for {_excerpt(name)} after its samples", lineno)
        if kind == "TYPE":
            block.type = value
        elif kind == "HELP":
            block.help = value
        block.meta_lines.append(lineno)
        self.meta.append((lineno, line))
        return block

    def _block(self, name: str | None, lineno: int) -> _Block:
        if name is not None:
            earlier = self.block_of.get(name)
            if earlier is not None:
                raise HistoryError(
                    f"metadata for {_excerpt(name)} after other families: its lines began at "
                    f"line {earlier.line} and must be contiguous",
                    lineno,
                )
        block = _Block(name, lineno)
        self.blocks.append(block)
        if name is not None:
            self.block_of[name] = block
        return block

    def _new_series(self, line: str, prefix: str, lineno: int, block: _Block) -> _Series:
        if " # " in line:
            raise HistoryError("exemplars are not supported in an imported history", lineno)
        if not prefix:
            raise HistoryError(
                f"expected '<name>{{<labels>}} <value> <timestamp>', got {_excerpt(line)}: "
                "every sample of a history needs its timestamp",
                lineno,
            )
        name, pairs = _split_series(prefix, line, lineno)
        labels = dict(pairs)
        instance = labels.get("instance")
        if instance is None:
            raise HistoryError(
                f"sample {_excerpt(prefix)} has no instance label: cannot tell which target "
                "exposed it",
                lineno,
            )
        target = self.targets.get(instance)
        if target is None:
            target = self.targets[instance] = _Target(instance, lineno, len(self.targets))
        series = _Series(len(self.by_id), target, block, name, pairs, lineno)
        if name == UP:
            if target.up is not None:
                raise HistoryError(
                    f"a second up series for instance {_excerpt(instance)} (the first is on "
                    f"line {target.up.line}): a target's labels must not change",
                    lineno,
                )
            target.up = series
        self.series[prefix] = series
        self.by_id.append(series)
        target.series.append(series)
        block.has_samples = True
        return series

    def _time(self, stamp: str, lineno: int) -> float:
        try:
            at = float(stamp) if not stamp.strip(_NUMBER_CHARS) else math.nan
        except ValueError:
            at = math.nan
        if not math.isfinite(at) or at < 0:
            raise HistoryError(
                f"invalid timestamp {_excerpt(stamp)}: every sample of a history needs one, "
                "in seconds",
                lineno,
            )
        self.times[stamp] = at
        return at

    def _check_metadata(self) -> None:
        """Every metadata line, read together by the strict OpenMetrics parser (types, help
        escapes, units, names claimed by two families)."""
        if not self.meta:
            return
        body = "\n".join(text for _, text in self.meta) + "\n# EOF\n"
        try:
            parse(body, openmetrics=True)
        except ExpositionError as exc:
            at = self.meta[min(exc.line, len(self.meta)) - 1][0] if self.meta else 1
            raise HistoryError(exc.message, at) from None

    # From lines to scrapes.

    def scrapes(self, *, parse_every_scrape: bool) -> HistoryContent:
        targets = [self._target(target) for target in self.targets.values()]
        by_time: dict[float, list[tuple[str, ScrapeOutcome]]] = {}
        scrapes = failed = samples = parses = 0
        for target, registered in zip(self.targets.values(), targets, strict=True):
            scraper = _TargetScrapes(self, target, registered.url, parse_every_scrape)
            for at, outcome in scraper.outcomes():
                by_time.setdefault(at, []).append((registered.url, outcome))
                scrapes += 1
                failed += not outcome.ok
                samples += outcome.sample_count
            parses += scraper.parses
        cycles = tuple(HistoryCycle(_datetime(at), tuple(by_time[at])) for at in sorted(by_time))
        return HistoryContent(tuple(targets), cycles, self.lines, scrapes, failed, samples, parses)

    def _target(self, target: _Target) -> HistoryTarget:
        up = target.up
        if up is None:
            raise HistoryError(
                f"instance {_excerpt(target.instance)} has no up series, so the labels "
                "Prometheus added to its samples are unknown",
                target.line,
            )
        labels = {name: _unescape(value) for name, value in up.pairs}
        kind = labels.pop("kind", None)
        if kind is None:
            kind = kind_from_job(labels.get("job", ""))
        elif kind not in KINDS:
            raise HistoryError(
                f"instance {_excerpt(target.instance)}: kind must be one of "
                f"{', '.join(sorted(KINDS))}",
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


class _TargetScrapes:
    """One target's scrapes, in time order, as the scraper would have reported them."""

    def __init__(self, reader: _Reader, target: _Target, url: str, parse_all: bool) -> None:
        self.reader = reader
        self.target = target
        self.url = url
        self.parse_all = parse_all
        self.memo = LayoutMemo()
        self.cache = LabelCache()
        self.plans: dict[bytes, _Plan] = {}
        self.parses = 0
        up = target.up
        assert up is not None  # _Reader._target checked it
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
                    f"instance {_excerpt(target.instance)} has samples at {_iso(at)} but no up "
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
                        f"instance {_excerpt(target.instance)} has samples at {_iso(at)}, when "
                        "its up is 0 (a failed scrape has none)",
                        bucket.line,
                    )
                outcome.error = ScrapeFailed(ErrorKind.CONNECTION, UP_DOWN_REASON)
            else:
                self._frame(at, bucket or _Bucket(up_line), outcome)
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

    def _frame(self, at: float, bucket: _Bucket, outcome: ScrapeOutcome) -> None:
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

    def _parse(self, at: float, bucket: _Bucket) -> tuple[_Plan, EncodedFrame]:
        """Rebuild the payload the target served, and parse it as a live scrape is."""
        self.parses += 1
        body, origins, order = self._payload(bucket)
        try:
            families = parse(body, cache=self.cache)
        except ExpositionError as exc:
            origin = origins[min(max(exc.line, 1), len(origins)) - 1] if origins else 0
            line = origin if origin > 0 else self._locate(at, -origin - 1)
            raise HistoryError(
                f"{exc.message} (in the scrape of {_excerpt(self.target.instance)} at {_iso(at)})",
                line,
            ) from None
        full = frame_encode(self.url, families, LayoutMemo())
        layout = frame_layout(families)
        take = np.array(_positions(families, layout, order), dtype=np.intp)
        return _Plan(layout, take, full, inventory_snapshot(families)), full

    def _payload(self, bucket: _Bucket) -> tuple[str, list[int], list[int]]:
        """The text-format payload of a scrape; per payload line where it came from (a
        file line number, or -(k + 1) for the scrape's k-th sample); and per sample line
        of the payload, its index among the scrape's samples."""
        by_id = self.reader.by_id
        lines: list[str] = []
        origins: list[int] = []
        order: list[int] = []
        ids = bucket.ids
        values = bucket.values
        start = 0
        while start < len(ids):
            block = by_id[ids[start]].block
            end = start
            while end < len(ids) and by_id[ids[end]].block is block:
                end += 1
            self._family(block, range(start, end), lines, origins, order, ids, values)
            start = end
        return "\n".join(lines) + "\n" if lines else "", origins, order

    def _family(
        self, block: _Block, run: range, lines: list[str], origins: list[int],
        order: list[int], ids: array[int], values: array[float],
    ) -> None:  # fmt: skip
        by_id = self.reader.by_id
        name = block.name
        type_ = block.type
        created_name = f"{name}_created" if type_ in _CREATED_PARENTS else None
        main = [k for k in run if by_id[ids[k]].name != created_name]
        created = [k for k in run if by_id[ids[k]].name == created_name]
        meta_line = block.meta_lines[0] if block.meta_lines else block.line
        if name is not None and type_ is not None and _TEXT_TYPES.get(type_):
            text_name = name
            if type_ == "counter" and any(by_id[ids[k]].name == f"{name}_total" for k in main):
                text_name = f"{name}_total"
            elif type_ == "info":
                text_name = f"{name}_info"
            if block.help is not None:
                lines.append(f"# HELP {text_name} {_text_help(block.help)}")
                origins.append(meta_line)
            lines.append(f"# TYPE {text_name} {_TEXT_TYPES[type_]}")
            origins.append(meta_line)
        elif name is not None and block.help is not None and type_ is None:
            lines.append(f"# HELP {name} {_text_help(block.help)}")
            origins.append(meta_line)
        for k in main:
            lines.append(f"{self._text(ids[k])} {_text_value(values[k])}")
            origins.append(-(k + 1))
            order.append(k)
        if created:
            # prometheus_client writes `_created` as a gauge family after its parent.
            if block.help is not None:
                lines.append(f"# HELP {created_name} {_text_help(block.help)}")
                origins.append(meta_line)
            lines.append(f"# TYPE {created_name} gauge")
            origins.append(meta_line)
            for k in created:
                lines.append(f"{self._text(ids[k])} {_text_value(values[k])}")
                origins.append(-(k + 1))
                order.append(k)

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
        for first, lines in self.reader._chunks():
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


def _split_series(prefix: str, line: str, lineno: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A series text's name and its label pairs (values as written)."""
    brace = prefix.find("{")
    name = prefix if brace < 0 else prefix[:brace]
    if _METRIC_NAME.fullmatch(name) is None:
        _fault(line, lineno, f"invalid metric name or sample line {_excerpt(line)}")
    if brace < 0:
        return name, ()
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    pos = brace + 1
    end = len(prefix) - 1
    if prefix[end] != "}":
        _fault(line, lineno, f"malformed labels in {_excerpt(line)}")
    while pos < end:
        match = _LABEL_PAIR.match(prefix, pos)
        if match is None:
            _fault(line, lineno, f"malformed labels in {_excerpt(line)}")
        label, value = match.groups()
        if label in seen:
            _fault(line, lineno, f"label {_excerpt(label)} given twice in {_excerpt(line)}")
        seen.add(label)
        pairs.append((label, value))
        pos = match.end()
        if pos < end:
            if prefix[pos] != "," or pos + 1 == end:
                _fault(line, lineno, f"malformed labels in {_excerpt(line)}")
            pos += 1
    return name, tuple(pairs)


def _fault(line: str, lineno: int, fallback: str) -> NoReturn:
    """Raise the strict parser's own message for a bad sample line, or `fallback`."""
    try:
        parse(f"{line}\n# EOF\n", openmetrics=True)
    except ExpositionError as exc:
        raise HistoryError(exc.message, lineno) from None
    raise HistoryError(fallback, lineno)


def _decoded(data: bytes, first_line: int) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise HistoryError(f"invalid UTF-8 at column {column}", line) from None
    for char, what in (("\x00", "NUL character"), ("\r", "carriage return (CRLF line ends?)")):
        at = text.find(char)
        if at >= 0:
            raise HistoryError(f"{what} is not allowed", first_line + text.count("\n", 0, at))
    return text


def _value_fault(token: str, line: str) -> str:
    if not token:
        return f"expected '<name>{{<labels>}} <value> <timestamp>', got {_excerpt(line)}"
    return f"invalid value {_excerpt(token)}"


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


def _excerpt(text: str) -> str:
    return repr(text) if len(text) <= EXCERPT_CHARS else repr(text[:EXCERPT_CHARS]) + "…"


def _datetime(at: float) -> datetime:
    return datetime.fromtimestamp(at, UTC)


def _iso(at: float) -> str:
    return _datetime(at).strftime("%Y-%m-%dT%H:%M:%SZ")
