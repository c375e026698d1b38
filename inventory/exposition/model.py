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
TEXT_SPECIALS = {"NaN": _NAN, "+Inf": _INF, "-Inf": -_INF}
# OpenMetrics' ABNF strings are case-insensitive and also spell out "infinity".
OM_SPECIALS = {"nan": _NAN}
for _word in ("inf", "infinity"):
    OM_SPECIALS.update({_word: _INF, "+" + _word: _INF, "-" + _word: -_INF})
NUMBER_CHARS = "0123456789.eE+-"


def parse_bound(text: str | None) -> float:
    """A bucket `le` or summary `quantile` label as a float; NaN when absent or not a number."""
    if text is None:
        return _NAN
    special = TEXT_SPECIALS.get(text)
    if special is None:
        special = OM_SPECIALS.get(text.lower())
    if special is not None:
        return special
    if text.strip(NUMBER_CHARS):
        return _NAN
    try:
        return float(text)
    except ValueError:
        return _NAN


_GROUPS: dict[frozenset[tuple[str, str]], frozenset[tuple[str, str]]] = {}
_GROUPS_MAX = 100_000


class Labels(dict[str, str]):
    """A read-only label set. Instances are shared between samples and across scrapes.

    It stays a `dict` so that it compares equal to plain dicts and serialises as
    one, but every mutator raises. The slots hold what the histogram checks
    need, computed once when the label text is first parsed: that is what keeps
    those checks cheap on a warm cache.
    """

    __slots__ = ("_key", "_group", "_le")

    def __init__(self, *args: Any, **kwargs: str) -> None:
        dict.__init__(self, *args, **kwargs)
        key = frozenset(dict.items(self))
        le = dict.get(self, "le")
        self._key = key
        if le is None:
            self._group = key
        else:
            # Canonical, so that buckets of one series share the very same key object
            # and the histogram check can compare keys by identity.
            group = frozenset(kv for kv in key if kv[0] != "le")
            if len(_GROUPS) >= _GROUPS_MAX:
                _GROUPS.clear()
            self._group = _GROUPS.setdefault(group, group)
        self._le = parse_bound(le)

    def _readonly(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("Labels are read-only; copy with dict(labels) to modify")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly
    __ior__ = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
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
    base. `problems` lists semantic faults that do not make the payload
    unparseable (a histogram without `+Inf`, a negative counter, ...).
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


class LabelCache:
    """Validated label text, kept across scrapes of one endpoint.

    `labels` maps the raw `{...}` text of a line to its Labels; `series` maps
    the text before the value (`name{...}`) to its (name, Labels) pair;
    `metadata` maps a whole HELP/TYPE line to its parsed fields. Only text that
    passed full validation is stored, so a hit needs no further checks.
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
