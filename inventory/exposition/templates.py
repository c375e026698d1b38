"""Re-reading a text-format payload whose lines are laid out as in the last scrape.

A replica sends the same series in the same order scrape after scrape; mostly
only the values change. After a full parse, `PayloadTemplate.build` keeps that parse's
line layout and result in the endpoint's LabelCache. The next payload is
checked against it in bulk, in C (`map`, `compress`, `itemgetter` over all lines):

* every comment and blank line must be the very same line as last time;
* every sample line must start with the same prefix (its text up to and
  including the space before the value) and go on with a value token that has
  no space: the same series, followed by a value;
* a sample line whose prefix changed (a label value moved, as
  `running_lora_adapters` does) is parsed in full here and must keep its
  sample name;
* a moved line must not make its series one that another line lists too;
* every value token that differs from the last scrape's on that line is
  checked as in the full parse; an unchanged token keeps its Sample object.

Family assembly (ownership, ordering, `_created` folding) depends only on the
metadata lines and the sample names in order, and those are proven unchanged,
so the families are the last scrape's with the changed Samples swapped in and
their problems recomputed; a family with no changed sample is reused whole
(it is frozen, and its problems depend only on its samples). Anything else
(another line count, a changed comment, a timestamp, a value to reject)
returns None and the caller parses the payload in full, which finds and
reports any error exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import attrgetter, is_, itemgetter, ne
from typing import Any

from inventory.exposition.assembler import CHECKED_TYPES, Pending
from inventory.exposition.checks import family_problems, has_repeats
from inventory.exposition.lexer import parse_text_line
from inventory.exposition.model import (
    ExpositionError,
    Family,
    FamilyTwin,
    LabelCache,
    Sample,
    SampleTwin,
    go_float,
)

_timestamp = attrgetter("timestamp")


class PayloadTemplate:
    """One endpoint's last text-format payload: where its samples are, and what they gave."""

    __slots__ = (
        "line_count",
        "pick_others",
        "others",
        "pick_samples",
        "sample_lines",
        "prefixes",
        "tokens",
        "samples",
        "families",
        "raws",
        "family_of",
        "bounds",
    )

    line_count: int
    pick_others: itemgetter[Any]  # lines -> the comments and blank lines
    others: tuple[str, ...]  # ... as they were
    pick_samples: itemgetter[Any]  # lines -> the sample lines
    sample_lines: list[int]  # per sample: the index of its line
    prefixes: list[str]  # per sample: its line up to the value token (`name{...} `)
    tokens: list[str]  # per sample: its value token
    samples: list[Sample]
    families: list[Family]
    raws: list[str]  # per family: the name its lines used (a counter's keeps `_total`)
    family_of: list[int]  # per sample: the index of its family
    bounds: list[int]  # family f holds samples[bounds[f]:bounds[f + 1]]

    @classmethod
    def build(
        cls, lines: list[str], families: list[Family], pendings: Sequence[Pending], limit: int
    ) -> PayloadTemplate | None:
        """The layout of a payload that just parsed in full; None if it cannot serve as one."""
        samples = [sample for family in families for sample in family.samples]
        if len(lines) > limit or not all(map(is_, map(_timestamp, samples), repeat(None))):
            return None  # timestamped lines are never cached (see parser._parse_bulk)
        sample_lines = [i for i, line in enumerate(lines) if line[:1] not in ("", "#")]
        other_lines = sorted(set(range(len(lines))).difference(sample_lines))
        if len(sample_lines) < 2 or len(other_lines) < 2:
            return None  # itemgetter would return a bare line; tiny payloads gain nothing
        if len(sample_lines) != len(samples):
            return None  # a line led by blanks (a comment, or blank): no layout for it
        template = cls()
        template.line_count = len(lines)
        template.pick_others = itemgetter(*other_lines)
        template.others = template.pick_others(lines)
        template.pick_samples = itemgetter(*sample_lines)
        template.sample_lines = sample_lines
        texts = template.pick_samples(lines)
        try:
            template.prefixes = [line[: line.rindex(" ") + 1] for line in texts]
        except ValueError:  # a sample line without a space (`x\t1`, `x{}1`): no layout
            return None
        template.tokens = list(map(str.removeprefix, texts, template.prefixes))
        template.samples = samples
        template.families = families
        template.raws = [pending.raw for pending in pendings]
        template.family_of = []
        template.bounds = [0]
        for f, family in enumerate(families):
            template.family_of.extend(repeat(f, len(family.samples)))
            template.bounds.append(len(template.family_of))
        return template

    def reparse(self, lines: list[str], cache: LabelCache) -> list[Family] | None:
        """The families of `lines` if laid out as last time (see the module docstring), else None.

        On success the layout now describes `lines`, ready for the next scrape.
        """
        if len(lines) != self.line_count or self.pick_others(lines) != self.others:
            return None
        texts = self.pick_samples(lines)
        prefixes = self.prefixes
        # Any: twins are stored before they become Samples (see SampleTwin).
        samples: list[Any] = list(self.samples)
        # What follows a sample's prefix is its value token, provided it has no space
        # (checked in _values for the tokens that changed). A line without its old
        # prefix comes back from removeprefix unchanged: the very same object.
        tokens = list(map(str.removeprefix, texts, prefixes))
        if any(map(is_, tokens, texts)):
            # Some series changed its labels: each such line is read in full.
            moved = [k for k, same in enumerate(map(is_, tokens, texts)) if same]
            if len(moved) > len(samples) // 4 + 1:
                return None  # mostly new: the full parse is cheaper than patching
            prefixes = list(prefixes)
            for k in moved:
                line = texts[k]
                if line[:1] in ("", "#"):
                    return None  # no longer a sample line: the full parse decides
                try:
                    name, labels, _, timestamp = parse_text_line(line, self.sample_lines[k] + 1)
                except ExpositionError:
                    return None
                if timestamp is not None or name != samples[k].name or labels._odd:
                    return None
                space = line.rfind(" ")
                if space < 0 or line[space - 1] == " ":
                    return None  # not `<prefix> <value>`: the full parse reads it
                prefixes[k] = line[: space + 1]
                # A stand-in with the new labels: the loop below copies them and sets the value.
                samples[k] = Sample(name, labels, 0.0)
                tokens[k] = line[len(prefixes[k]) :]
        else:
            moved = []
        fresh = list(map(ne, tokens, self.tokens))  # per sample: needs a new Sample
        for k in moved:
            fresh[k] = True
        changed = list(compress(count(), fresh))
        values = _values(list(compress(tokens, fresh)))
        if values is None:
            return None

        for k, value in zip(changed, values, strict=True):
            old = samples[k]  # the same series as the last scrape's sample on this line
            sample = SampleTwin()
            sample.name = old.name
            sample.labels = old.labels
            sample.value = value
            sample.timestamp = None
            sample.__class__ = Sample  # type: ignore[assignment]  # same slots: see SampleTwin
            samples[k] = sample
        if moved and has_repeats(samples):
            return None  # a moved line now repeats a series: the full parse reports it
        families = list(self.families)
        bounds = self.bounds
        for f in set(compress(self.family_of, fresh)):
            families[f] = _refilled(families[f], self.raws[f], samples[bounds[f] : bounds[f + 1]])

        self.prefixes = prefixes
        self.tokens = tokens
        self.samples = samples
        self.families = families
        return families


def _values(tokens: list[str]) -> list[float] | None:
    """The values of new value tokens, or None if any is not one the full parse accepts."""
    try:
        values = list(map(float, tokens))
    except ValueError:
        return None
    joined = "".join(tokens)
    if not (joined.isascii() and joined.isprintable()) or "_" in joined or " " in joined:
        return None
    total = sum(values)
    if total - total != 0:
        # Some value is NaN or infinite (or the sum overflowed): only the spellings Go's
        # ParseFloat reads are accepted; an out-of-range number is left to the full parse.
        for j, value in enumerate(values):
            if value - value != 0:
                special = go_float(tokens[j])
                if special is None:
                    return None
                values[j] = special
    return values


def _refilled(old: Family, raw: str, samples: list[Sample]) -> Family:
    """`old` with new samples and the problems they have (as Assembler.finish builds it)."""
    family: Any = FamilyTwin()
    family.name = old.name
    family.type = type_ = old.type
    family.help = old.help
    family.unit = old.unit
    family.samples = held = tuple(samples)
    family.problems = family_problems(type_, raw, held, om=False) if type_ in CHECKED_TYPES else ()
    family.__class__ = Family  # see SampleTwin
    return family
