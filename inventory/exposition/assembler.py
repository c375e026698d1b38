"""How lines become families: metadata rules, which sample names a family owns, clashes.

Family rule (both dialects): a family is opened by its first HELP/TYPE/UNIT
line or, without metadata, by a sample whose name no family owns yet (it is
then of type `unknown`, which is also what a text-format `untyped` TYPE
becomes, as in prometheus_client). A family owns the sample names
its type allows:

    text format            counter N: N        (family name drops a trailing _total)
                           gauge/unknown N: N
                           summary N: N, N_count, N_sum
                           histogram N: N_bucket, N_count, N_sum
    OpenMetrics            counter N: N_total, N_created
                           summary N: N, N_count, N_sum, N_created
                           histogram N: N_bucket, N_count, N_sum, N_created
                           gaugehistogram N: N_bucket, N_gcount, N_gsum
                           info N: N_info;  gauge/stateset/unknown N: N

The family name itself is reserved too, so `vllm:iteration_tokens_total` (a
histogram) keeps its name: `_total` is only dropped for counters. A text-format
counter `x_total` does not reserve `x`: the format knows nothing of suffixes, so a
gauge `x` next to it is another metric (both families are then named `x`, as
prometheus_client names them). All lines
of one family are contiguous, metadata comes before samples and at most once
per kind, and no name may be owned by two families.

In the text format prometheus_client writes each counter's, histogram's and
summary's `_created` series as a separate gauge family `<base>_created` right
after its parent; we fold those lines into the parent (as its `<base>_created`
samples, its HELP dropped) so both dialects give the same shape and an
inventory of families lists only real metrics. The fold happens as the lines
arrive: the parent enters a "created phase" in which it accepts only the
`_created` samples, exactly as if a separate family had begun. Anything that
does not fit (a TYPE other than gauge, a sample before the TYPE) turns the
`_created` lines back into a family of their own.
"""

from __future__ import annotations

import functools
import sys

from inventory.exposition.checks import family_problems
from inventory.exposition.model import Family, FamilyTwin, Sample, excerpt, fail

TEXT_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped"})
OM_TYPES = frozenset(
    {"counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary", "unknown"}
)
_TEXT_SUFFIXES = {
    "summary": ("", "_count", "_sum"),
    "histogram": ("_bucket", "_count", "_sum"),
}
_OM_SUFFIXES = {
    "counter": ("_total", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "gaugehistogram": ("_bucket", "_gcount", "_gsum"),
    "info": ("_info",),
}
_CREATED_PARENTS = frozenset({"counter", "histogram", "summary"})
# The types whose values family_problems() checks.
CHECKED_TYPES = frozenset({"counter", "histogram", "gaugehistogram", "summary", "info", "stateset"})


HELP, TYPE, UNIT = 1, 2, 4
KIND_BITS = {"HELP": HELP, "TYPE": TYPE, "UNIT": UNIT}
_KIND_NAMES = {bit: kind for kind, bit in KIND_BITS.items()}

# One validated metadata line: (kind bit, family name, value, shape). For a
# TYPE line the shape is what _shape() derives from it; it rides along so that
# a line found in the LabelCache needs no recomputation.
Metadata = tuple[int, str, str, "tuple[frozenset[str], frozenset[str], str | None] | None"]


def metadata_fields(kind: str, raw: str, value: str, lineno: int, *, om: bool) -> Metadata:
    """Validate what one metadata line says on its own (not where it appears)."""
    shape = None
    if kind == "TYPE":
        if value not in (OM_TYPES if om else TEXT_TYPES):
            fail(lineno, f"unknown metric type {excerpt(value)} for {excerpt(raw)}")
        if value == "untyped":
            value = "unknown"
        shape = _shape(raw, value, om)
    return KIND_BITS[kind], raw, value, shape


class Pending:
    """A family while its lines are being read."""

    __slots__ = (
        "raw",
        "type",
        "help",
        "unit",
        "samples",
        "line",
        "allowed",
        "seen",
        "created",
        "created_seen",
        "created_help",
        "created_line",
        "created_start",
    )
    # Set when a `_created` family starts to fold in (Assembler._created_line).
    created_help: str
    created_line: int
    created_start: int

    def __init__(self, raw: str, type_: str, line: int) -> None:
        self.raw = raw
        self.type = type_
        self.help = ""
        self.unit = ""
        self.samples: list[Sample] = []
        self.line = line
        self.allowed = frozenset((raw,))
        self.seen = 0  # bits of the metadata kinds already given
        self.created: str | None = None  # the name of a foldable `_created` family
        self.created_seen = 0  # metadata bits of that family, once its lines began


class Assembler:
    """Tracks the family being read and every name claimed so far."""

    def __init__(self, *, om: bool) -> None:
        self.om = om
        self.families: list[Pending] = []
        self.current: Pending | None = None
        self._owner: dict[str, Pending] = {}

    def metadata(self, fields: Metadata, lineno: int) -> Pending:
        """Apply one validated metadata line (see metadata_fields); return its family."""
        bit, raw, value, shape = fields
        cur = self.current
        if cur is not None and cur.created is not None:
            if cur.created == raw and cur.raw != raw:
                if self._created_line(cur, bit, value, lineno):
                    return cur
            elif cur.created_seen and not cur.created_seen & TYPE:
                self._unfold(cur)
            cur = self.current
        if cur is None or cur.raw != raw:
            owner = self._owner.get(raw)
            if owner is not None:
                kind = _KIND_NAMES[bit]
                if owner.raw == raw:
                    fail(
                        lineno,
                        f"{kind} for {excerpt(raw)} after other families: its lines began at "
                        f"line {owner.line} and must be contiguous",
                    )
                fail(lineno, f"{kind} for {excerpt(raw)} clashes with family {_cite(owner)}")
            cur = self._open(raw, lineno)
        elif cur.created_seen:
            fail(
                lineno,
                f"{_KIND_NAMES[bit]} for {excerpt(raw)} after other families: its lines began "
                f"at line {cur.line} and must be contiguous",
            )
        elif cur.samples:
            fail(lineno, f"{_KIND_NAMES[bit]} line for {excerpt(raw)} after its samples")
        if cur.seen & bit:
            fail(lineno, f"second {_KIND_NAMES[bit]} line for {excerpt(raw)}")
        cur.seen |= bit
        if bit == HELP:
            cur.help = value
        elif bit == UNIT:
            cur.unit = value
        else:
            cur.type = value
            cur.allowed, claims, cur.created = shape  # type: ignore[misc]  # shape tuples are typed loosely for speed
            if claims:
                self._claim(cur, claims, lineno)
        return cur

    def metadata_pair(self, first: Metadata, second: Metadata, lineno: int) -> Pending:
        """Apply a HELP line and the TYPE line right after it, for the same family.

        prometheus_client writes every family this way, so the usual case (a new
        family, no `_created` fold pending) takes one short path.
        """
        raw = first[1]
        cur = self.current
        usual = raw not in self._owner and first[0] == HELP and second[0] == TYPE
        if usual and cur is not None:
            if cur.created == raw:
                if not cur.created_seen and second[2] == "gauge":
                    # The parent's `_created` family, folded in one step (see _created_line).
                    cur.created_line = lineno
                    cur.created_help = first[2]
                    cur.created_start = len(cur.samples)
                    cur.created_seen = HELP | TYPE
                    cur.allowed = _single(raw)
                    self._owner[raw] = cur
                    return cur
                usual = False
            elif cur.created_seen == HELP:
                usual = False
        if not usual:
            self.metadata(first, lineno)
            return self.metadata(second, lineno + 1)
        allowed, claims, created = second[3]  # type: ignore[misc]  # the metadata tuple's shape slot
        owners = self._owner
        if claims and not owners.keys().isdisjoint(claims):
            self._claim(self._open(raw, lineno), claims, lineno + 1)  # raises: names taken
        # Filled in directly rather than through __init__: this runs once per family.
        pending = _new(Pending)
        pending.raw = raw
        pending.type = second[2]
        pending.help = first[2]
        pending.unit = ""
        pending.samples = []
        pending.line = lineno
        pending.allowed = allowed
        pending.seen = HELP | TYPE
        pending.created = created
        pending.created_seen = 0
        owners[raw] = pending
        if claims:
            owners.update(dict.fromkeys(claims, pending))
        self.families.append(pending)
        self.current = pending
        return pending

    def open_for_sample(self, name: str, lineno: int) -> Pending:
        """Called when a sample's name is not allowed in the current family."""
        cur = self.current
        if cur is not None and cur.created_seen and not cur.created_seen & TYPE:
            # `_created` lines without a TYPE: they form a family of their own after all.
            cur = self._unfold(cur)
            if name in cur.allowed:
                return cur
        owner = self._owner.get(name)
        if owner is not None:
            if owner is cur and not cur.created_seen:
                fail(
                    lineno,
                    f"sample {excerpt(name)} is not part of {owner.type} family "
                    f"{excerpt(owner.raw)}",
                )
            fail(
                lineno,
                f"sample {excerpt(name)} belongs to family {_cite(owner)}; "
                "a family's samples must be contiguous",
            )
        return self._open(name, lineno)

    def finish(self) -> list[Family]:
        cur = self.current
        if cur is not None and cur.created_seen and not cur.created_seen & TYPE:
            self._unfold(cur)
        om = self.om
        out = []
        for pending in self.families:
            raw = pending.raw
            type_ = pending.type
            samples = tuple(pending.samples)
            family = FamilyTwin()
            family.name = (
                raw[:-6] if type_ == "counter" and not om and raw[-6:] == "_total" else raw
            )
            family.type = type_
            family.help = pending.help
            family.unit = pending.unit
            family.samples = samples
            # OpenMetrics rejects what the text format lists as problems (see openmetrics).
            family.problems = (
                family_problems(type_, raw, samples, om=om)
                if type_ in CHECKED_TYPES and not om
                else ()
            )
            family.__class__ = Family  # type: ignore[assignment]  # same slots: see SampleTwin
            out.append(family)
        return out  # type: ignore[return-value]  # every twin's class is Family by now

    def _open(self, raw: str, lineno: int) -> Pending:
        pending = Pending(raw, "unknown", lineno)
        self._owner[raw] = pending
        self.families.append(pending)
        self.current = pending
        return pending

    def _claim(self, family: Pending, names: frozenset[str], lineno: int) -> None:
        owners = self._owner
        if not owners.keys().isdisjoint(names):
            taken = next(owners[name] for name in sorted(names) if name in owners)
            fail(lineno, f"family {excerpt(family.raw)} clashes with family {_cite(taken)}")
        owners.update(dict.fromkeys(names, family))

    def _created_line(self, parent: Pending, bit: int, value: str, lineno: int) -> bool:
        """Fold one HELP/TYPE line of the parent's `_created` family; False if it does not fit.

        On False the caller handles the line as usual; any `_created` lines folded
        before it have then been given a family of their own.
        """
        name = parent.created
        assert name is not None  # only called for the family's pending `_created` name
        seen = parent.created_seen
        if seen and len(parent.samples) > parent.created_start:
            fail(lineno, f"{_KIND_NAMES[bit]} line for {excerpt(name)} after its samples")
        if seen & bit:
            fail(lineno, f"second {_KIND_NAMES[bit]} line for {excerpt(name)}")
        if bit != HELP and (bit != TYPE or value != "gauge"):
            if seen:
                self._unfold(parent)
            return False
        if not seen:
            if name in self._owner:
                return False  # the ordinary path reports the clash
            parent.created_line = lineno
            parent.created_help = ""
            parent.created_start = len(parent.samples)
            parent.allowed = _NOTHING  # the parent's own samples are over
            self._owner[name] = parent
        parent.created_seen = seen | bit
        if bit == HELP:
            parent.created_help = value
        else:
            parent.allowed = _single(name)
        return True

    def _unfold(self, parent: Pending) -> Pending:
        """Give `_created` lines that turned out not to be foldable a family of their own."""
        name: str = parent.created  # type: ignore[assignment]  # only called when set
        seen = parent.created_seen
        parent.created = None
        parent.created_seen = 0
        del self._owner[name]
        family = self._open(name, parent.created_line)
        if seen & HELP:
            family.help = parent.created_help
            family.seen = HELP
        return family


_NOTHING: frozenset[str] = frozenset()
_new = object.__new__


@functools.lru_cache(maxsize=4096)
def _shape(raw: str, type_: str, om: bool) -> tuple[frozenset[str], frozenset[str], str | None]:
    """What a family's TYPE implies: the sample names it may hold, the other names it
    reserves (its own name was claimed when it opened), and, in the text format, the
    name of the `_created` gauge family that may be folded into it.
    """
    suffixes = (_OM_SUFFIXES if om else _TEXT_SUFFIXES).get(type_, ("",))
    allowed = frozenset(sys.intern(raw + suffix) for suffix in suffixes)
    claims = set(allowed)
    # A text-format counter `x_total` is reported as family `x` (as prometheus_client
    # does) but does not own the name `x`: a gauge `x` is another metric of the format.
    base = raw[:-6] if type_ == "counter" and not om and raw.endswith("_total") else raw
    claims.discard(raw)
    created = None
    if not om and type_ in _CREATED_PARENTS:
        created = sys.intern(base + "_created")
    return allowed, frozenset(claims), created


@functools.lru_cache(maxsize=4096)
def _single(name: str) -> frozenset[str]:
    return frozenset((name,))


def _cite(family: Pending) -> str:
    return f"{excerpt(family.raw)} (line {family.line})"
