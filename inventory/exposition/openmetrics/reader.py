"""The semantic rules of an OpenMetrics exposition, line by line: families and their
metadata, metrics and metric points (contiguous, timestamps in order, repeats dropped with
a problem), the value rules of each type and every histogram point's buckets, count and
sum."""

from __future__ import annotations

import sys

from inventory.exposition.assembler import Assembler, Pending, metadata_fields
from inventory.exposition.checks import cap, repeat_problem
from inventory.exposition.model import Family, Sample, excerpt, fail, go_float
from inventory.exposition.openmetrics.tokens import (
    metadata_match,
    read_sample,
    repeat_key,
    unescape,
    unit_match,
)

_INF = float("inf")
_COUNTER_LIKE = ("_total", "_sum", "_count", "_bucket", "_gcount", "_gsum")
# A sample's series: its name and label set (in any order).
_Series = tuple[str, frozenset[tuple[str, str]]]


class _Point:
    """One histogram metric point (a run of samples with the same labels and timestamp)."""

    __slots__ = ("line", "bound", "bucket", "count", "sum", "gsum", "negative", "negative_gsum")

    def __init__(self) -> None:
        self.line = 0
        self.bound: float | None = None  # the last bucket's threshold
        self.bucket = 0.0  # the last bucket's value
        self.count: float | None = None
        self.sum = self.gsum = self.negative = self.negative_gsum = False


class Reader:
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
        m = metadata_match(line)
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
            value = unescape(value) if "\\" in value else value
        elif kind == "UNIT" and unit_match(value) is None:
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
        sample, has_exemplar, stamp = read_sample(line, lineno)
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
        kept = self._order(family, sample, repeat_key(stamp), lineno)
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
