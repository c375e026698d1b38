"""The pass over a recorded history's lines: OpenMetrics with timestamps, as Prometheus
stored it.

`LineReader(path).read()` reads the whole file once, in chunks, and checks every line:
metadata (`# TYPE`, `# HELP`, `# UNIT`) before each family's samples, every sample with a
timestamp, each family's lines contiguous, `# EOF` last; exemplars are refused. What it
keeps is, per target (its `instance`), the samples of each timestamp in file order
(`ScrapeSamples`: series ids and values) and the series Prometheus' scrape loop wrote for it
(`up`, `scrape_*`). A series' samples need not be contiguous (fleetsim writes every
family scrape by scrape), and targets need not share timestamps. Any fault raises
`HistoryError` naming the line. `inventory.history.scrapes` turns what it kept into
scrapes.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from inventory.exposition import ExpositionError, parse

UP = "up"
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
_OM_HELP = re.compile(r'(?:[^\\\n]|\\[\\n"])*')
_OM_TYPES = frozenset(
    {"counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary", "unknown"}
)


class HistoryError(ValueError):
    """The history cannot be imported; nothing of it was written. `line` is 1-based when
    the fault is on one line of the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message if line is None else f"line {line}: {message}")
        self.line = line
        self.message = message


class Block:
    """One family's lines in the file: its metadata, then its samples."""

    __slots__ = ("name", "type", "help", "line", "meta_lines", "has_samples")

    def __init__(self, name: str | None, line: int) -> None:
        self.name = name  # None: samples before any metadata
        self.type: str | None = None
        self.help: str | None = None  # as written (OpenMetrics escapes)
        self.line = line
        self.meta_lines: list[int] = []
        self.has_samples = False


class FileSeries:
    """One distinct series text of the file (`name{labels}`, target labels included)."""

    __slots__ = ("id", "target", "block", "name", "pairs", "line", "scrape_series")

    def __init__(
        self, id_: int, target: FileTarget, block: Block, name: str,
        pairs: tuple[tuple[str, str], ...], line: int,
    ) -> None:  # fmt: skip
        self.id = id_
        self.target = target
        self.block = block
        self.name = name
        self.pairs = pairs  # (name, value as written, escapes kept)
        self.line = line
        self.scrape_series = name in SCRAPE_SERIES


class ScrapeSamples:
    """The samples of one target at one timestamp, in file order."""

    __slots__ = ("ids", "values", "line")

    def __init__(self, line: int) -> None:
        self.ids: array[int] = array("i")
        self.values: array[float] = array("d")
        self.line = line


@dataclass
class FileTarget:
    """A target of the file (its `instance`): its samples by timestamp, and the series
    Prometheus' scrape loop wrote for it."""

    instance: str  # as written
    line: int
    index: int
    buckets: dict[float, ScrapeSamples] = field(default_factory=dict)
    # Prometheus' own series of this target: name -> {timestamp: (value, line)}
    scrape_series: dict[str, dict[float, tuple[float, int]]] = field(default_factory=dict)
    up: FileSeries | None = None
    series: list[FileSeries] = field(default_factory=list)


class LineReader:
    """One pass over the file's lines (`read`): what each target's samples were, checked."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.series: dict[str, FileSeries] = {}
        self.by_id: list[FileSeries] = []
        self.targets: dict[str, FileTarget] = {}
        self.blocks: list[Block] = []
        self.block_of: dict[str, Block] = {}
        self.meta: list[tuple[int, str]] = []  # (line, text) of every metadata line
        self.times: dict[str, float] = {}
        self.lines = 0
        self.eof_line = 0

    def read(self) -> None:
        block: Block | None = None
        for first, lines in self.chunks():
            block = self._lines(first, lines, block)
        if not self.eof_line:
            raise HistoryError(
                "missing '# EOF' at the end (required in OpenMetrics)", max(self.lines, 1)
            )
        self._check_metadata()
        if not self.targets:
            raise HistoryError("no samples: there is nothing to import")

    def chunks(self) -> Iterator[tuple[int, list[str]]]:
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

    def _lines(self, first: int, lines: list[str], block: Block | None) -> Block | None:
        series_get = self.series.get
        times_get = self.times.get
        numbers = _NUMBER_CHARS
        last_target: FileTarget | None = None
        last_time = ""
        bucket: ScrapeSamples | None = None
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
                    f"series {excerpt(prefix)} was in the family that began at line "
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
                    bucket = target.buckets[at] = ScrapeSamples(lineno)
                last_target, last_time = target, stamp
            bucket.ids.append(series.id)
            bucket.values.append(value)
        self.lines = lineno
        return block

    def _comment(self, line: str, lineno: int, block: Block | None) -> Block | None:
        if line == "# EOF":
            self.eof_line = lineno
            return block
        if not line:
            raise HistoryError("blank line (not allowed in OpenMetrics)", lineno)
        match = _METADATA.fullmatch(line)
        if match is None:
            if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")):
                raise HistoryError(
                    f"malformed metadata line {excerpt(line)}: expected '# KIND <name> <text>'",
                    lineno,
                )
            raise HistoryError(
                f"comment lines are not allowed in OpenMetrics: {excerpt(line)}", lineno
            )
        kind, name, value = match.groups()
        if kind == "TYPE" and value not in _OM_TYPES:
            raise HistoryError(f"unknown metric type {excerpt(value)} for {excerpt(name)}", lineno)
        if kind == "HELP" and _OM_HELP.fullmatch(value) is None:
            raise HistoryError(f"invalid escape in the HELP text of {excerpt(name)}", lineno)
        if block is None or block.name != name:
            block = self._block(name, lineno)
        elif block.has_samples:
            raise HistoryError(f"{kind} line for {excerpt(name)} after its samples", lineno)
        if kind == "TYPE":
            block.type = value
        elif kind == "HELP":
            block.help = value
        block.meta_lines.append(lineno)
        self.meta.append((lineno, line))
        return block

    def _block(self, name: str | None, lineno: int) -> Block:
        if name is not None:
            earlier = self.block_of.get(name)
            if earlier is not None:
                raise HistoryError(
                    f"metadata for {excerpt(name)} after other families: its lines began at "
                    f"line {earlier.line} and must be contiguous",
                    lineno,
                )
        block = Block(name, lineno)
        self.blocks.append(block)
        if name is not None:
            self.block_of[name] = block
        return block

    def _new_series(self, line: str, prefix: str, lineno: int, block: Block) -> FileSeries:
        if " # " in line:
            raise HistoryError("exemplars are not supported in an imported history", lineno)
        if not prefix:
            raise HistoryError(
                f"expected '<name>{{<labels>}} <value> <timestamp>', got {excerpt(line)}: "
                "every sample of a history needs its timestamp",
                lineno,
            )
        name, pairs = _split_series(prefix, line, lineno)
        labels = dict(pairs)
        instance = labels.get("instance")
        if instance is None:
            raise HistoryError(
                f"sample {excerpt(prefix)} has no instance label: cannot tell which target "
                "exposed it",
                lineno,
            )
        target = self.targets.get(instance)
        if target is None:
            target = self.targets[instance] = FileTarget(instance, lineno, len(self.targets))
        series = FileSeries(len(self.by_id), target, block, name, pairs, lineno)
        if name == UP:
            if target.up is not None:
                raise HistoryError(
                    f"a second up series for instance {excerpt(instance)} (the first is on "
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
                f"invalid timestamp {excerpt(stamp)}: every sample of a history needs one, "
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


def _split_series(prefix: str, line: str, lineno: int) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A series text's name and its label pairs (values as written)."""
    brace = prefix.find("{")
    name = prefix if brace < 0 else prefix[:brace]
    if _METRIC_NAME.fullmatch(name) is None:
        _fault(line, lineno, f"invalid metric name or sample line {excerpt(line)}")
    if brace < 0:
        return name, ()
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    pos = brace + 1
    end = len(prefix) - 1
    if prefix[end] != "}":
        _fault(line, lineno, f"malformed labels in {excerpt(line)}")
    while pos < end:
        match = _LABEL_PAIR.match(prefix, pos)
        if match is None:
            _fault(line, lineno, f"malformed labels in {excerpt(line)}")
        label, value = match.groups()
        if label in seen:
            _fault(line, lineno, f"label {excerpt(label)} given twice in {excerpt(line)}")
        seen.add(label)
        pairs.append((label, value))
        pos = match.end()
        if pos < end:
            if prefix[pos] != "," or pos + 1 == end:
                _fault(line, lineno, f"malformed labels in {excerpt(line)}")
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
        return f"expected '<name>{{<labels>}} <value> <timestamp>', got {excerpt(line)}"
    return f"invalid value {excerpt(token)}"


def excerpt(text: str) -> str:
    return repr(text) if len(text) <= EXCERPT_CHARS else repr(text[:EXCERPT_CHARS]) + "…"
