"""The values the exposition parser returns, its one error type, and its label cache.

Kept apart from the parsing code so the helper modules can share them without
importing each other in a circle; `inventory.exposition.parser` re-exports everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, TypeVar

EXCERPT_CHARS = 40
V = TypeVar("V")


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short repr of remote input, safe to put in a log line or a page."""
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + "…"


class ExpositionError(ValueError):
    """The payload is not a valid exposition; nothing from it may be used.

    `line` is 1-based. `message` names the problem and quotes at most a short,
    repr-escaped excerpt of the input.
    """

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.line, self.message))


def fail(line: int, message: str) -> NoReturn:
    raise ExpositionError(line, message)


_INF = float("inf")
_NAN = float("nan")
_INFINITIES = {"inf": _INF, "+inf": _INF, "-inf": -_INF}
for _sign, _value in (("", _INF), ("+", _INF), ("-", -_INF)):
    _INFINITIES[_sign + "infinity"] = _value


def go_float(token: str) -> float | None:
    """What Go's strconv.ParseFloat(token, 64) returns, or None where it fails or
    Prometheus refuses the token (hexadecimal `p` exponents, `_` separators).

    That is: a decimal number with an optional exponent that fits a float64, or
    `inf`/`infinity` with an optional sign and `nan` without one, in any case.
    OpenMetrics' `number` is the same set of spellings. float() is the fast judge,
    but it also takes `1_000`, a signed NaN, surrounding whitespace and non-ASCII
    digits, and gives infinity for out-of-range numbers.
    """
    try:
        value = float(token)
    except ValueError:
        return None
    if value - value == 0:
        # Python whitespace in ASCII is all unprintable, except the space.
        if token.isascii() and token.isprintable() and "_" not in token and " " not in token:
            return value
        return None
    if value != value:
        return value if token.lower() == "nan" else None
    return _INFINITIES.get(token.lower())


def parse_bound(text: str | None) -> float:
    """A bucket `le` or summary `quantile` label as a float; NaN when absent or not a number."""
    if text is None:
        return _NAN
    value = go_float(text)
    return _NAN if value is None else value


_GROUPS: dict[frozenset[tuple[str, str]], frozenset[tuple[str, str]]] = {}
_BOUNDS: dict[str, float] = {}  # `le` text -> its number (pure: no payload can change it)
_SLOTS = frozenset({"_key", "_group", "_le", "_odd"})
_GROUPS_MAX = 100_000


# Labels._odd bits: an `le` (`quantile`) label whose value is not a number. The text
# format refuses such a sample in a histogram (summary) family.
ODD_LE, ODD_QUANTILE = 1, 2


class Labels(dict[str, str]):
    """A read-only label set. Instances are shared between samples and across scrapes.

    It stays a `dict` so that it compares equal to plain dicts and serialises as
    one, but every mutator raises. The slots hold what the histogram checks
    need, computed once when the label text is first parsed: that is what keeps
    those checks cheap on a warm cache.
    """

    __slots__ = ("_key", "_group", "_le", "_odd")
    _key: frozenset[tuple[str, str]]
    _group: frozenset[tuple[str, str]]
    _le: float
    _odd: int

    # No __init__: dict's own fills the pairs in C. The slots are worked out on first
    # use (most label sets never need them; a bucket's are read by the histogram check).
    def __getattr__(self, name: str) -> Any:
        if name not in _SLOTS:
            raise AttributeError(name)
        self._fill()
        return object.__getattribute__(self, name)

    def _fill(self) -> None:
        key = frozenset(dict.items(self))
        le = dict.get(self, "le")
        self._key = key
        odd = 0
        if le is None:
            self._group = key
            self._le = _NAN
        else:
            # Canonical, so that buckets of one series share the very same key object
            # and the histogram check can compare keys by identity.
            group = key.difference((("le", le),))
            if len(_GROUPS) >= _GROUPS_MAX:
                _GROUPS.clear()
            self._group = _GROUPS.setdefault(group, group)
            bound = _BOUNDS.get(le)
            if bound is None:
                bound = go_float(le)
                if bound is None:
                    bound = _NAN
                    odd = ODD_LE
                elif len(_BOUNDS) < _GROUPS_MAX:
                    _BOUNDS[le] = bound
            self._le = bound
        if "quantile" in self and go_float(dict.__getitem__(self, "quantile")) is None:
            odd |= ODD_QUANTILE
        self._odd = odd

    def _readonly(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("Labels are read-only; copy with dict(labels) to modify")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly
    __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]  # dict's __hash__ is None; labels hash
        return hash(self._key)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Labels, (dict(self),))

    def __copy__(self) -> Labels:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Labels:
        return self

    def __repr__(self) -> str:
        return f"Labels({dict.__repr__(self)})"

    @property
    def as_key(self) -> frozenset[tuple[str, str]]:
        """The label set as an order-independent, hashable key."""
        return self._key

    @property
    def as_key_without_le(self) -> frozenset[tuple[str, str]]:
        """The key of the histogram series a `_bucket` sample belongs to."""
        return self._group


EMPTY_LABELS = Labels()


@dataclass(frozen=True, slots=True)
class Sample:
    """One sample line. `timestamp` is in seconds (the text format's milliseconds are divided)."""

    name: str
    labels: Mapping[str, str]
    value: float
    timestamp: float | None = None


class SampleTwin:
    """Same slot layout as Sample, without the frozen `__setattr__`.

    A frozen dataclass pays for `object.__setattr__` on every field, which is
    most of the per-sample cost on a warm scrape. The parser fills a twin and
    then re-labels it as a Sample (`__class__` assignment is allowed between
    classes with identical slots); from then on it is an ordinary frozen Sample.
    """

    __slots__ = ("name", "labels", "value", "timestamp")
    name: str
    labels: Mapping[str, str]
    value: float
    timestamp: float | None


if Sample.__slots__ != SampleTwin.__slots__:  # pragma: no cover - guards the trick above
    raise RuntimeError("Sample and SampleTwin must declare identical slots")


@dataclass(frozen=True, slots=True)
class Family:
    """A metric family and all of its samples.

    `name` follows prometheus_client: a counter's family name drops `_total`
    (text format) and histogram/summary children (`_bucket`, `_count`, `_sum`,
    `_created`, `_gcount`, `_gsum`) are samples of the family named after their
    base. `problems` lists semantic faults that do not make a text-format payload
    unparseable (a histogram without `+Inf`, a negative counter, ...); OpenMetrics
    rejects those, so its families list only a series repeated within a metric point.
    """

    name: str
    type: str
    help: str
    unit: str
    samples: tuple[Sample, ...]
    problems: tuple[str, ...] = field(default=())

    def samples_named(self, name: str) -> Iterable[Sample]:
        return (s for s in self.samples if s.name == name)


class FamilyTwin:
    """Same slot layout as Family; see SampleTwin for why."""

    __slots__ = ("name", "type", "help", "unit", "samples", "problems")
    name: str
    type: str
    help: str
    unit: str
    samples: tuple[Sample, ...]
    problems: tuple[str, ...]


if Family.__slots__ != FamilyTwin.__slots__:  # pragma: no cover
    raise RuntimeError("Family and FamilyTwin must declare identical slots")


class Generations(Generic[V]):
    """A bounded map: a young dict filled until full, then aged; the old one is dropped.

    Lookups read `young` directly (the hot path) and call `promote` on a miss.
    Memory stays under twice `max_entries` without any per-hit bookkeeping.
    """

    __slots__ = ("max_entries", "young", "_old", "aging")

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self.young: dict[str, V] = {}
        self._old: dict[str, V] = {}
        self.aging = False  # whether the old generation still holds entries

    def __len__(self) -> int:
        return len(self.young) + len(self._old)

    def get(self, key: str) -> V | None:
        hit = self.young.get(key)
        return hit if hit is not None or not self.aging else self.promote(key)

    def promote(self, key: str) -> V | None:
        hit = self._old.pop(key, None)
        if hit is not None:
            self.aging = bool(self._old)
            self.put(key, hit)
        return hit

    def put(self, key: str, value: V) -> None:
        if len(self.young) >= self.max_entries:
            self._old = self.young
            self.young = {}
            self.aging = True
        self.young[key] = value

    def update(self, keys: Iterable[str], values: Iterable[V]) -> None:
        """put() for many entries; in one C-level step while the young generation has room."""
        young = self.young
        pairs = dict(zip(keys, values, strict=True))
        if len(young) + len(pairs) <= self.max_entries:
            young.update(pairs)
            return
        for key, value in pairs.items():
            self.put(key, value)


class LabelCache:
    """Validated label text, kept across scrapes of one endpoint.

    `labels` maps the label text of a canonical line (after its `{`, up to and
    including `}`) to its Labels; `series` maps the text before the value of a
    canonical line (`name{...}`) to its (name, Labels) pair;
    `metadata` maps a whole HELP/TYPE line to its parsed fields. Only text that
    passed full validation is stored, so a hit needs no further checks; label sets
    with an `le` or `quantile` label that is not a number are never stored (whether
    they are valid depends on the family they turn up in).
    `template` is the last text-format payload's line layout and result (see
    `inventory.exposition.templates`): family rules and value checks are only
    skipped for lines proven identical to that validated payload's. It is built
    once two payloads in a row have the same number of lines (`line_count`).
    """

    __slots__ = ("series", "labels", "metadata", "template", "line_count")

    def __init__(self, max_entries: int = 50_000) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        self.series: Generations[tuple[str, Labels]] = Generations(max_entries)
        self.labels: Generations[Labels] = Generations(max_entries)
        self.metadata: Generations[tuple[Any, ...]] = Generations(max_entries)
        self.template: Any = None  # a templates.PayloadTemplate (that module imports this one)
        self.line_count = -1  # lines in the last text payload parsed in full

    def __len__(self) -> int:
        return len(self.series) + len(self.labels) + len(self.metadata)


# Validated label texts and metadata lines shared by every endpoint of the process: what
# a text means does not depend on who sent it, and replicas of one fleet repeat each
# other's label sets (model, engine, bucket bounds), so the first scrape of an endpoint
# mostly finds its label sets here. Bounded like a LabelCache; only valid text goes in.
SHARED = LabelCache(max_entries=200_000)


def forget_shared_tables() -> None:
    """Empty SHARED and this module's memos (see parser.forget_shared)."""
    SHARED.series = Generations(SHARED.series.max_entries)
    SHARED.labels = Generations(SHARED.labels.max_entries)
    SHARED.metadata = Generations(SHARED.metadata.max_entries)
    _GROUPS.clear()
    _BOUNDS.clear()
