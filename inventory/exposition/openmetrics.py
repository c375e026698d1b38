"""OpenMetrics 1.0 text: its ABNF and the semantic rules of its specification.

Syntax (the ABNF): the exposition ends with `# EOF` (one optional line feed after
it, nothing else); no blank lines and no comments; metadata is `# HELP`, `# TYPE`
or `# UNIT`, each token separated by exactly one space; a sample is
`name[{labels}] value[ timestamp][ # {labels} value[ timestamp]]` with single spaces;
label sets have no blanks and no trailing comma, label names match
`[a-zA-Z_][a-zA-Z0-9_]*` and do not start with `__`; in label values and HELP text
`\\\\`, `\\"` and `\\n` are escapes and a backslash before any other character is kept
as it is (`\\t` stays two characters), NUL and CR are ordinary characters; numbers
are decimal (with an optional exponent, fitting a float64), `inf`/`infinity` with an
optional sign or `nan`, in any case; timestamps are seconds, decimal only.

Semantics (each a MUST of the specification; the payload is rejected at the first
offending line):

* families: a TYPE is one of counter, gauge, histogram, gaugehistogram, stateset,
  info, summary, unknown; at most one HELP, TYPE and UNIT each, all before the
  family's samples; a non-empty unit is the suffix `_<unit>` of the family name and
  info and stateset families have none; sample names are the family's own
  (counter `_total`/`_created`, summary `''`/`_count`/`_sum`/`_created`,
  histogram `_bucket`/`_count`/`_sum`/`_created`, gaugehistogram
  `_bucket`/`_gcount`/`_gsum`, info `_info`, others the bare name); no name
  belongs to two families; families, metrics and metric points are not interleaved;
* metric points: the samples of one metric are contiguous, all with or all
  without timestamps, which never go backwards (info families excepted);
* counters: `_total` is neither NaN nor negative;
* histograms and gauge histograms, per metric point: every `_bucket` has an `le`
  that is a number, not NaN, `+Inf` spelled so; bucket values are integers, not
  negative, not decreasing; thresholds strictly increase and end at `+Inf`;
  `_count`/`_gcount` is an integer equal to the `+Inf` bucket, present if and only
  if `_sum`/`_gsum` is; `_sum` is neither NaN nor negative and absent when a
  threshold is negative; a negative `_gsum` needs a negative threshold; the
  metric's own labels have no `le`;
* summaries: every quantile sample has a `quantile` label in [0, 1] and a value
  that is not negative; `_count` is an integer; `_count` and `_sum` are neither
  NaN nor negative; the metric's own labels have no `quantile`;
* info: every value is 1; stateset: every sample has a label named after the
  family, and its value is 0 or 1;
* exemplars only on counter `_total` and (gauge) histogram `_bucket` samples,
  their label names and values at most 128 characters in all.

A series may have several lines only as metric points whose timestamps increase (a
Metric's points "MUST have monotonically increasing timestamps"); lines of another
metric between two of its lines interleave metrics, which is rejected. A sample that
repeats a series of its metric point (no timestamp, or the same one) is not rejected:
it is dropped, as prometheus_client and Prometheus drop it, and the family lists a
problem naming the series' lines, as the text format does (`checks.repeat_problem`).
Unlike prometheus_client, we keep the samples of a metric's later points (it drops
those whose series the metric had before, so it refuses a histogram with two
timestamped points).
Timestamps are plain float seconds; exemplars are validated and then dropped
(samples carry no exemplar field).

This path favours clarity over speed: the fleet is scraped in the text format
(prometheus_client renames `vllm:` samples under OpenMetrics, issue #1177).
"""

from __future__ import annotations

import re
import sys
from typing import NoReturn

from inventory.exposition.assembler import Assembler, Pending, metadata_fields
from inventory.exposition.budget import CHECK_EVERY_LINES, ParseBudget, SampleLimitExceeded
from inventory.exposition.checks import cap, repeat_problem
from inventory.exposition.lexer import LABEL_NAME, METRIC_NAME
from inventory.exposition.model import (
    EMPTY_LABELS,
    ExpositionError,
    Family,
    LabelCache,
    Labels,
    Sample,
    excerpt,
    fail,
    go_float,
)

_metadata_match = re.compile(rf"# (HELP|TYPE|UNIT) ({METRIC_NAME}) (.*)", re.DOTALL).fullmatch
_unit_match = re.compile(r"[a-zA-Z0-9_:]*").fullmatch
_metric_name_at = re.compile(METRIC_NAME).match
_label_name_at = re.compile(LABEL_NAME).match
_realnumber_match = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
).fullmatch
_quoted_stop = re.compile(r'["\\]').search
_integer_match = re.compile(r"[+-]?[0-9]+").fullmatch
_digits_match = re.compile(r"[0-9]*").fullmatch
_om_escape = re.compile(r"\\(.?)", re.DOTALL)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_EXEMPLAR_MAX_CHARS = 128
_INF = float("inf")
_COUNTER_LIKE = ("_total", "_sum", "_count", "_bucket", "_gcount", "_gsum")
# A sample's series: its name and label set (in any order).
_Series = tuple[str, frozenset[tuple[str, str]]]


def parse_openmetrics(
    text: str, cache: LabelCache, budget: ParseBudget | None = None
) -> list[Family]:
    if not text:
        fail(1, "empty payload: missing '# EOF' (required in OpenMetrics)")
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the line feed after "# EOF"
    reader = _Reader()
    last = len(lines)
    lineno = 0
    # Every line that is not a comment is a sample (or malformed): the sample past the
    # limit is the line after this many of them.
    limit = None if budget is None else budget.max_samples
    samples_left = last if limit is None else limit
    check_time = None if budget is None or budget.deadline is None else budget.check_time
    try:
        for lineno, line in enumerate(lines, 1):
            if check_time is not None and not lineno % CHECK_EVERY_LINES:
                check_time(lineno)
            if line == "# EOF":
                if lineno != last:
                    fail(lineno + 1, "text after '# EOF'")
                return reader.finish(lineno)
            if not line:
                fail(lineno, "blank line (not allowed in OpenMetrics)")
            if line[0] == "#":
                reader.metadata(line, lineno)
            else:
                if not samples_left and limit is not None:
                    raise SampleLimitExceeded(lineno, limit)
                samples_left -= 1
                reader.sample(line, lineno)
        fail(max(last, 1), "missing '# EOF' at the end (required in OpenMetrics)")
    except ExpositionError:
        raise
    except Exception as exc:  # pragma: no cover - the fuzz tests keep this unreachable
        raise ExpositionError(lineno, f"internal parser error ({type(exc).__name__})") from exc


# --- lexing ------------------------------------------------------------------------------


def _unescape(raw: str) -> str:
    """An escaped-string: `\\\\`, `\\"` and `\\n` are escapes, `\\` + anything else stays."""
    return _om_escape.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), raw)


def _labels(line: str, k: int, lineno: int) -> tuple[Labels, int]:
    """The label set starting at line[k] == '{'; the index after its '}'."""
    n = len(line)
    labels: dict[str, str] = {}
    k += 1
    if line[k : k + 1] == "}":
        return EMPTY_LABELS, k + 1
    while True:
        m = _label_name_at(line, k)
        if m is None:
            _bad_label_start(line, k, lineno)
        name = m.group()
        k = m.end()
        if line[k : k + 2] != '="':
            if line[k : k + 1] == "=" and line[k + 1 : k + 2] in (",", "}", ""):
                fail(lineno, f"empty unquoted value for label {excerpt(name)}")
            if line[k : k + 1] in (" ", "\t"):
                fail(lineno, "whitespace inside the label set (not allowed in OpenMetrics)")
            fail(lineno, f"expected '=\"' after label name {excerpt(name)}")
        start = k = k + 2
        while True:
            stop = _quoted_stop(line, k)
            if stop is None:
                fail(lineno, f"unterminated quoted value for label {excerpt(name)}")
            k = stop.start()
            if line[k] == '"':
                break
            if k + 1 >= n:
                fail(lineno, f"unterminated quoted value for label {excerpt(name)}")
            k += 2
        raw = line[start:k]
        k += 1
        if name[:2] == "__":
            fail(lineno, f"label name {excerpt(name)} is reserved (names starting __)")
        if name in labels:
            fail(lineno, f"duplicate label name {excerpt(name)}")
        labels[sys.intern(name)] = sys.intern(_unescape(raw) if "\\" in raw else raw)
        c = line[k : k + 1]
        if c == "}":
            return Labels(labels), k + 1
        if c != ",":
            if c in (" ", "\t"):
                fail(lineno, "whitespace inside the label set (not allowed in OpenMetrics)")
            fail(lineno, f"expected ',' or '}}' after the value of label {excerpt(name)}")
        k += 1
        if line[k : k + 1] == "}":
            fail(lineno, "trailing comma in label set (not allowed in OpenMetrics)")


def _bad_label_start(line: str, k: int, lineno: int) -> NoReturn:
    c = line[k : k + 1]
    if not c:
        fail(lineno, "unterminated label set (missing '}')")
    if c in (" ", "\t"):
        fail(lineno, "whitespace inside the label set (not allowed in OpenMetrics)")
    if c == ",":
        fail(lineno, "empty label: leading or repeated comma in label set")
    if c == '"':
        fail(lineno, "quoted label names are not part of OpenMetrics 1.0")
    fail(lineno, f"invalid label name at {excerpt(line[k:])}")


def _number(token: str, lineno: int, what: str = "value") -> float:
    value = go_float(token)
    if value is None:
        if _realnumber_match(token) is not None:
            fail(lineno, f"{what} {excerpt(token)} is out of range for a 64-bit float")
        fail(lineno, f"invalid {what} {excerpt(token)}: expected a number, NaN or ±Inf")
    return value


def _timestamp(token: str, lineno: int) -> float:
    if _realnumber_match(token) is None:
        fail(lineno, f"invalid timestamp {excerpt(token)}: expected seconds as a number")
    value = float(token)
    if value == _INF or value == -_INF:
        fail(lineno, f"timestamp {excerpt(token)} is out of range")
    return value


def _repeat_key(token: str | None) -> object:
    """What tells two timestamps of one series apart for the repeat rule: as in
    prometheus_client, integer and `a.b` spellings to the nanosecond, others as floats
    (and never equal to the first kind)."""
    if token is None:
        return None
    whole, dot, fraction = token.partition(".")
    if _integer_match(whole) is not None and (not dot or _digits_match(fraction) is not None):
        return (int(whole), fraction[:9].ljust(9, "0"))
    return float(token)


def _read_sample(line: str, lineno: int) -> tuple[Sample, bool, str | None]:
    """One sample line; whether it carries an exemplar; its timestamp's spelling."""
    m = _metric_name_at(line)
    if m is None:
        if line[0] == "{":
            fail(lineno, "sample has no metric name (quoted names are not part of 1.0)")
        fail(lineno, f"invalid metric name at the start of {excerpt(line)}")
    name = sys.intern(m.group())
    k = m.end()
    labels = EMPTY_LABELS
    if line[k : k + 1] == "{":
        labels, k = _labels(line, k, lineno)
    if line[k : k + 1] != " ":
        if k == len(line):
            fail(lineno, f"sample {excerpt(line)} has no value")
    elif line[k + 1 : k + 2] == "{" and labels is EMPTY_LABELS and line[k - 1 : k] != "}":
        fail(lineno, "blank between the metric name and its labels (not allowed in OpenMetrics)")
    if line[k : k + 1] != " ":
        fail(lineno, f"expected a single space before the value in {excerpt(line)}")
    values, marker, exemplar = line[k + 1 :].partition(" # ")
    tokens = values.split(" ")
    if "" in tokens or len(tokens) > 2:
        if "\t" in values:
            fail(lineno, f"tab in {excerpt(line)}: OpenMetrics separates tokens by one space")
        fail(lineno, f"expected '<value> [<timestamp>]' after the labels in {excerpt(line)}")
    value = _number(tokens[0], lineno)
    timestamp = _timestamp(tokens[1], lineno) if len(tokens) == 2 else None
    if marker:
        _check_exemplar(exemplar, lineno)
    stamp = tokens[1] if len(tokens) == 2 else None
    return Sample(name, labels, value, timestamp), bool(marker), stamp


def _check_exemplar(text: str, lineno: int) -> None:
    if text[:1] != "{":
        fail(lineno, "exemplar must start with a label set: '# {…} <value> [<timestamp>]'")
    labels, k = _labels(text, 0, lineno)
    if sum(len(name) + len(value) for name, value in labels.items()) > _EXEMPLAR_MAX_CHARS:
        fail(lineno, "exemplar labels exceed 128 characters")
    if text[k : k + 1] != " ":
        fail(lineno, f"malformed exemplar {excerpt(text)}")
    tokens = text[k + 1 :].split(" ")
    if "" in tokens or len(tokens) > 2:
        fail(lineno, f"malformed exemplar {excerpt(text)}")
    _number(tokens[0], lineno, "exemplar value")
    if len(tokens) == 2:
        _timestamp(tokens[1], lineno)


# --- families ----------------------------------------------------------------------------


class _Point:
    """One histogram metric point (a run of samples with the same labels and timestamp)."""

    __slots__ = ("line", "bound", "bucket", "count", "sum", "gsum", "negative", "negative_gsum")

    def __init__(self) -> None:
        self.line = 0
        self.bound: float | None = None  # the last bucket's threshold
        self.bucket = 0.0  # the last bucket's value
        self.count: float | None = None
        self.sum = self.gsum = self.negative = self.negative_gsum = False


class _Reader:
    """The state of one exposition: the assembler and the open family's rules."""

    def __init__(self) -> None:
        self.assembler = Assembler(om=True)
        self.family: Pending | None = None
        self.group: tuple[tuple[str, str], ...] | None = None
        self.groups: set[tuple[tuple[str, str], ...]] = set()
        self.group_timestamp: float | None = None
        self.group_stamp: object = None
        # The series of the current metric point: its first sample (the one kept) and
        # the lines it is on.
        self.repeats: dict[_Series, tuple[Sample, list[int]]] = {}
        # Per family, each series repeated within a metric point, for its problem.
        self.repeated: dict[Pending, list[tuple[Sample, list[int]]]] = {}
        self.point: _Point | None = None
        self.point_key: tuple[object, float | None] | None = None

    def metadata(self, line: str, lineno: int) -> None:
        m = _metadata_match(line)
        if m is None:
            if line.startswith(("# HELP ", "# TYPE ", "# UNIT ")):
                fail(
                    lineno,
                    f"malformed metadata line {excerpt(line)}: expected '# KIND <name> <text>'",
                )
            if line.startswith("# EOF"):
                fail(lineno, f"malformed EOF line {excerpt(line)}: expected exactly '# EOF'")
            fail(lineno, f"comment lines are not allowed in OpenMetrics: {excerpt(line)}")
        kind, name, value = m.groups()
        name = sys.intern(name)
        if kind == "HELP":
            if value.endswith("\\") and (len(value) - len(value.rstrip("\\"))) % 2:
                fail(lineno, "HELP text ends with a lone backslash")
            value = _unescape(value) if "\\" in value else value
        elif kind == "UNIT" and _unit_match(value) is None:
            fail(lineno, f"invalid unit {excerpt(value)}")
        fields = metadata_fields(kind, name, value, lineno, om=True)
        family = self.assembler.metadata(fields, lineno)
        self._switch(family)
        if family.unit and kind in ("UNIT", "TYPE"):
            if not family.raw.endswith("_" + family.unit):
                fail(
                    lineno,
                    f"family {excerpt(family.raw)} does not end with its unit _{family.unit}",
                )
            if family.type in ("info", "stateset"):
                fail(lineno, f"{family.type} family {excerpt(family.raw)} cannot have a unit")

    def sample(self, line: str, lineno: int) -> None:
        sample, has_exemplar, stamp = _read_sample(line, lineno)
        family = self.assembler.current
        if family is None or sample.name not in family.allowed:
            family = self.assembler.open_for_sample(sample.name, lineno)
        self._switch(family)
        raw, type_ = family.raw, family.type
        name, labels, value = sample.name, sample.labels, sample.value
        suffix = name[len(raw) :]
        # The checks prometheus_client's parser makes, in its order, then the spec's own.
        if type_ == "stateset" and raw not in labels:
            fail(lineno, f"stateset sample lacks the label {excerpt(raw)}")
        if suffix == "_bucket":
            _check_le(labels.get("le"), lineno)
            if not value.is_integer():
                fail(lineno, f"bucket value {value:g} is not an integer")
        elif type_ in ("histogram", "gaugehistogram") and "le" in labels:
            fail(lineno, f"{type_} {excerpt(raw)}: only _bucket samples have an le label")
        if suffix in ("_count", "_gcount") and not value.is_integer():
            fail(lineno, f"{suffix[1:]} value {value:g} is not an integer")
        if type_ == "summary":
            if not suffix:
                quantile = go_float(labels.get("quantile", "x"))
                if quantile is None or not 0 <= quantile <= 1:
                    fail(lineno, "summary quantile sample without a quantile label in [0, 1]")
            elif "quantile" in labels:
                fail(lineno, f"summary {excerpt(raw)}: only quantile samples have that label")
        kept = self._order(family, sample, _repeat_key(stamp), lineno)
        if type_ == "stateset" and value != 0 and value != 1:
            fail(lineno, f"stateset value {value:g} is not 0 or 1")
        if type_ == "info" and value != 1:
            fail(lineno, f"info value {value:g} is not 1")
        if type_ == "summary" and not suffix and value < 0:
            fail(lineno, f"summary quantile value {value:g} is negative")
        if suffix in _COUNTER_LIKE:
            if value != value:
                fail(lineno, f"{excerpt(name)} is NaN (counter-like samples cannot be)")
            if value < 0 and suffix != "_gsum":
                fail(lineno, f"{excerpt(name)} is negative (counter-like samples cannot be)")
        if has_exemplar and not (
            (type_ == "counter" and suffix == "_total")
            or (type_ in ("histogram", "gaugehistogram") and suffix == "_bucket")
        ):
            fail(lineno, "exemplars are only allowed on counter _total and histogram _bucket")
        if kept:
            family.samples.append(sample)
            if type_ in ("histogram", "gaugehistogram"):
                self._histogram(sample, suffix, lineno)

    def finish(self, lineno: int) -> list[Family]:
        self._switch(None)
        families = self.assembler.finish()
        if not self.repeated:
            return families
        out = []
        for pending, family in zip(self.assembler.families, families, strict=True):
            found = self.repeated.get(pending)
            if found is not None:
                problems = cap([repeat_problem(first, lines) for first, lines in found])
                family = Family(
                    family.name, family.type, family.help, family.unit, family.samples, problems
                )
            out.append(family)
        return out

    # --- per-family state

    def _switch(self, family: Pending | None) -> None:
        if family is self.family:
            return
        self._close_point()
        self.family = family
        self.group = None
        self.groups = set()
        self.group_timestamp = None
        self.group_stamp = None
        self.repeats = {}
        self.point_key = None

    def _order(self, family: Pending, sample: Sample, stamp: object, lineno: int) -> bool:
        """The metric and metric point rules; False for a repeat to drop."""
        labels = sample.labels
        type_ = family.type
        if type_ == "info":
            group: tuple[tuple[str, str], ...] = ()
        else:
            drop = None
            if type_ in ("histogram", "gaugehistogram") and sample.name == family.raw + "_bucket":
                drop = "le"
            elif type_ == "summary" and sample.name == family.raw:
                drop = "quantile"
            elif type_ == "stateset":
                drop = family.raw
            group = tuple(sorted(kv for kv in labels.items() if kv[0] != drop))
        timestamp = sample.timestamp
        if self.group is not None and group == self.group:
            if (timestamp is None) != (self.group_timestamp is None):
                fail(lineno, "a metric mixes samples with and without timestamps")
            if (
                timestamp is not None
                and timestamp < self.group_timestamp  # type: ignore[operator]  # both set: checked above
                and type_ != "info"
            ):
                fail(lineno, "timestamps go backwards within a metric")
        else:
            if group in self.groups:
                fail(lineno, f"samples of one metric are not contiguous in {excerpt(family.raw)}")
            self.repeats = {}
        if stamp != self.group_stamp:
            self.repeats = {}  # a new metric point
        series = (sample.name, frozenset(labels.items()))
        seen = self.repeats.get(series)
        if seen is None:
            self.repeats[series] = (sample, [lineno])
        else:
            if len(seen[1]) == 1:  # its first repeat: the family gets a problem for it
                self.repeated.setdefault(family, []).append(seen)
            seen[1].append(lineno)
        self.group = group
        self.group_timestamp = timestamp
        self.group_stamp = stamp
        self.groups.add(group)
        return seen is None

    def _histogram(self, sample: Sample, suffix: str, lineno: int) -> None:
        labels = sample.labels
        if suffix == "_bucket":
            group: object = frozenset(kv for kv in labels.items() if kv[0] != "le")
        else:
            group = frozenset(labels.items())
        key = (group, sample.timestamp)
        if key != self.point_key:
            self._close_point()
            self.point = _Point()
            self.point_key = key
        point = self.point
        assert point is not None
        point.line = lineno
        value = sample.value
        if suffix == "_bucket":
            bound = go_float(labels["le"])
            assert bound is not None  # checked by _check_le
            if bound < 0:
                point.negative = True
            if point.bound is not None and bound <= point.bound:
                fail(lineno, "bucket thresholds are not in increasing order")
            if value < point.bucket:
                fail(lineno, "bucket values decrease (buckets are cumulative)")
            point.bound = bound
            point.bucket = value
        elif suffix in ("_count", "_gcount"):
            point.count = value
        elif suffix == "_sum":
            point.sum = True
        elif suffix == "_gsum":
            point.gsum = True
            if value < 0:
                point.negative_gsum = True

    def _close_point(self) -> None:
        point = self.point
        if point is None:
            return
        self.point = None
        self.point_key = None
        lineno = point.line
        if point.bound != _INF:
            fail(lineno, "histogram metric point without a +Inf bucket")
        if point.count is not None and point.count != point.bucket:
            fail(lineno, f"count {point.count:g} differs from the +Inf bucket {point.bucket:g}")
        if (point.sum or point.gsum) and point.count is None:
            fail(lineno, "a histogram with a sum needs its count")
        if point.count is not None and not (point.sum or point.gsum):
            fail(lineno, "a histogram with a count needs its sum")
        if point.negative and point.sum:
            fail(lineno, "a histogram with negative thresholds cannot have a _sum")
        if point.negative_gsum and not point.negative:
            fail(lineno, "a negative _gsum needs a negative bucket threshold")


def _check_le(le: str | None, lineno: int) -> None:
    if le is None:
        fail(lineno, "bucket without an le label")
    bound = go_float(le)
    if bound is None or bound != bound:
        fail(lineno, f"bucket le={excerpt(le)} is not a number")
    if bound == _INF and le != "+Inf":
        fail(lineno, f"bucket le={excerpt(le)}: +Inf must be written '+Inf'")
