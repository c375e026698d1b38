"""OpenMetrics 1.0 text: the rules that differ from the Prometheus text format.

On top of the shared lexical rules: the payload ends with `# EOF` (one
optional newline after it, nothing else); no blank lines or free comments;
metadata is HELP, TYPE or UNIT with exactly one space after the name; a UNIT
must be the suffix of its family's name and is not allowed on info or stateset
families; label sets have no trailing comma; timestamps are seconds; the
samples of one series (metric point) are contiguous, all with or all without
timestamps, and their timestamps never go backwards; exemplars (` # {...} v
[ts]`, at most 128 characters of label names and values) appear only on
counter `_total` and histogram/gaugehistogram `_bucket` samples; a stateset
sample carries a label named after its family. Value-level faults (a NaN
counter, a histogram that is not cumulative, an info value other than 1, ...)
become `Family.problems`, as in the text format.

This path favours clarity over speed: the fleet is scraped in the text format
(prometheus_client renames `vllm:` samples under OpenMetrics, issue #1177).
"""

from __future__ import annotations

import re
import sys

from inventory.exposition.assembler import Assembler, Pending, metadata_fields
from inventory.exposition.lexer import (
    METRIC_NAME,
    OM_LABELS,
    diagnose_sample,
    labels_for,
    om_prefix_match,
    parse_label_text,
    parse_om_timestamp,
    parse_value,
    unescape_help,
)
from inventory.exposition.model import (
    EMPTY_LABELS,
    ExpositionError,
    Family,
    LabelCache,
    Labels,
    Sample,
    excerpt,
    fail,
)

_metadata_match = re.compile(rf"# (HELP|TYPE|UNIT) ({METRIC_NAME}) (.*)").fullmatch
_unit_match = re.compile(r"[a-zA-Z0-9_:]*").fullmatch
_exemplar_match = re.compile(rf"({OM_LABELS}) ([^ ]+)(?: ([^ ]+))?").fullmatch
_EXEMPLAR_MAX_CHARS = 128


class _SeriesOrder:
    """Per-family state for the contiguity and timestamp rules."""

    __slots__ = ("family", "last_key", "last_timestamp", "seen")

    def __init__(self, family: Pending) -> None:
        self.family = family
        self.last_key: frozenset[tuple[str, str]] | None = None
        self.last_timestamp: float | None = None
        self.seen: set[frozenset[tuple[str, str]]] = set()


def parse_openmetrics(text: str, cache: LabelCache) -> list[Family]:
    if not text:
        fail(1, "empty payload: missing '# EOF' (required in OpenMetrics)")
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the newline after "# EOF"
    assembler = Assembler(om=True)
    order: _SeriesOrder | None = None
    last = len(lines)
    lineno = 0
    try:
        for lineno, line in enumerate(lines, 1):
            if line == "# EOF":
                if lineno != last:
                    fail(lineno + 1, "text after '# EOF'")
                return assembler.finish()
            if not line:
                fail(lineno, "blank line (not allowed in OpenMetrics)")
            if line[0] == "#":
                _metadata(line, lineno, assembler)
                continue
            sample, has_exemplar = _sample(line, lineno, cache)
            family = assembler.current
            if family is None or sample.name not in family.allowed:
                family = assembler.open_for_sample(sample.name, lineno)
            if has_exemplar and not _exemplar_allowed(family, sample.name):
                fail(lineno, "exemplars are only allowed on counter _total and histogram _bucket")
            if order is None or order.family is not family:
                order = _SeriesOrder(family)
            _check_order(order, sample, lineno)
            family.samples.append(sample)
        fail(max(last, 1), "missing '# EOF' at the end (required in OpenMetrics)")
    except ExpositionError:
        raise
    except Exception as exc:  # pragma: no cover - the fuzz tests keep this unreachable
        raise ExpositionError(lineno, f"internal parser error ({type(exc).__name__})") from exc


def _metadata(line: str, lineno: int, assembler: Assembler) -> None:
    m = _metadata_match(line)
    if m is None:
        if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")):
            fail(
                lineno, f"malformed metadata line {excerpt(line)}: expected '# KIND <name> <text>'"
            )
        fail(lineno, f"comment lines are not allowed in OpenMetrics: {excerpt(line)}")
    kind, name, value = m.groups()
    name = sys.intern(name)
    if kind == "HELP":
        value = unescape_help(value, lineno, om=True)
    elif kind == "UNIT" and _unit_match(value) is None:
        fail(lineno, f"invalid unit {excerpt(value)}")
    family = assembler.metadata(metadata_fields(kind, name, value, lineno, om=True), lineno)
    if family.unit and kind in ("UNIT", "TYPE"):
        if not family.raw.endswith("_" + family.unit):
            fail(lineno, f"family {excerpt(family.raw)} does not end with its unit _{family.unit}")
        if family.type in ("info", "stateset"):
            fail(lineno, f"{family.type} family {excerpt(family.raw)} cannot have a unit")


def _sample(line: str, lineno: int, cache: LabelCache) -> tuple[Sample, bool]:
    m = om_prefix_match(line)
    end = m.end() if m is not None else 0
    if m is None or end == len(line) or line[end] != " ":
        diagnose_sample(line, lineno, om=True)
    name, label_text = m.groups()
    labels = labels_for(label_text, lineno, cache, om=True) if label_text else EMPTY_LABELS
    values, marker, exemplar = line[end + 1 :].partition(" # ")
    tokens = values.split(" ")
    if "" in tokens or len(tokens) > 2:
        fail(lineno, f"expected '<value> [<timestamp>]' after the labels in {excerpt(line)}")
    value = parse_value(tokens[0], lineno, om=True)
    timestamp = parse_om_timestamp(tokens[1], lineno) if len(tokens) == 2 else None
    if marker:
        _check_exemplar(exemplar, lineno)
    return Sample(sys.intern(name), labels, value, timestamp), bool(marker)


def _check_exemplar(text: str, lineno: int) -> None:
    m = _exemplar_match(text)
    if m is None:
        if not text.startswith("{"):
            fail(lineno, "exemplar must start with a label set: '# {…} <value> [<timestamp>]'")
        parse_label_text(text[: text.find("}") + 1] or text, lineno, om=True)
        fail(lineno, f"malformed exemplar {excerpt(text)}")
    label_text, value, timestamp = m.groups()
    labels = parse_label_text(label_text, lineno, om=True)
    if sum(len(k) + len(v) for k, v in labels.items()) > _EXEMPLAR_MAX_CHARS:
        fail(lineno, "exemplar labels exceed 128 characters")
    parse_value(value, lineno, om=True)
    if timestamp is not None:
        parse_om_timestamp(timestamp, lineno)


def _check_order(order: _SeriesOrder, sample: Sample, lineno: int) -> None:
    family = order.family
    name = sample.name
    labels: Labels = sample.labels  # type: ignore[assignment]  # the parser's own Labels
    type_ = family.type
    if type_ in ("histogram", "gaugehistogram") and name == family.raw + "_bucket":
        key = labels.as_key_without_le
    elif type_ == "summary" and name == family.raw:
        key = frozenset(kv for kv in labels.items() if kv[0] != "quantile")
    elif type_ == "stateset":
        if family.raw not in labels:
            fail(lineno, f"stateset sample lacks the label {excerpt(family.raw)}")
        key = frozenset(kv for kv in labels.items() if kv[0] != family.raw)
    else:
        key = labels.as_key
    timestamp = sample.timestamp
    if key == order.last_key:
        if (timestamp is None) != (order.last_timestamp is None):
            fail(lineno, "a series mixes samples with and without timestamps")
        if timestamp is not None and timestamp < order.last_timestamp:  # type: ignore[operator]
            fail(lineno, "timestamps go backwards within a series")
    elif key in order.seen:
        fail(lineno, f"samples of one series are not contiguous in family {excerpt(family.raw)}")
    order.seen.add(key)
    order.last_key = key
    order.last_timestamp = timestamp


def _exemplar_allowed(family: Pending, name: str) -> bool:
    if family.type == "counter":
        return name == family.raw + "_total"
    if family.type in ("histogram", "gaugehistogram"):
        return name == family.raw + "_bucket"
    return False
