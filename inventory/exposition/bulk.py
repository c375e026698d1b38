"""The bulk path of the text-format parser: every line at once, with C-level `map` calls.

Every line in the layout client libraries write (`name{labels} value`) is split, looked
up and converted over all lines at once; each distinct name and label text is validated
once (and remembered in the LabelCache for the next scrape, and process-wide in
`model.SHARED`); other lines are read one by one with the general lexer. Anything
doubtful makes it give up (None), and the caller reads the payload line by line, the
judge that names the first offending line.
"""

from __future__ import annotations

import sys
from collections import deque
from itertools import compress, count, repeat
from operator import and_, is_, is_not, ne, not_, or_, sub
from typing import Any

from inventory.exposition.assembler import Assembler, Pending
from inventory.exposition.budget import CHECK_EVERY_LINES, ParseBudget, ParseStopped
from inventory.exposition.lexer import (
    labels_of_texts,
    metric_name_match,
    parse_text_line,
    text_comment_fields,
)
from inventory.exposition.model import (
    EMPTY_LABELS,
    SHARED,
    ExpositionError,
    Family,
    LabelCache,
    Labels,
    Sample,
    go_float,
)

Parsed = tuple[list[Family], list[Pending]]


def parse_bulk(
    lines: list[str], cache: LabelCache, remember: bool, budget: ParseBudget | None = None
) -> Parsed | None:
    """Read a payload whose every line ends in a line feed; None if anything is doubtful."""
    try:
        return _bulk(lines, cache, remember, budget)
    except ParseStopped:
        raise
    except (ExpositionError, ValueError):  # ValueError: a token float() refuses
        return None


def _bulk(
    lines: list[str], cache: LabelCache, remember: bool, budget: ParseBudget | None
) -> Parsed | None:
    n = len(lines)
    # The passes below run in C over all lines; the deadline is looked at between them.
    check_time = _no_check if budget is None or budget.deadline is None else budget.check_time
    # Every line split at its last space, in C: for a sample in the usual layout, the
    # text before the space names its series and the text after it is the value.
    # Comments and blank lines go through the same steps and come out as "irregular".
    heads, _, tokens = zip(*map(str.rpartition, lines, repeat(" ")), strict=True)
    check_time(1)
    resolved = _series_of(heads, cache, remember)
    if resolved is None:
        return None
    check_time(1)
    names, labelsets = resolved
    regular = list(
        map(and_, map(is_not, names, repeat(None)), map(is_not, labelsets, repeat(None)))
    )

    # Values: float() over the regular lines' tokens in C, then one check of the
    # spellings it lets by (Go's ParseFloat is stricter).
    value_tokens = list(compress(tokens, regular))
    values = list(map(float, value_tokens))
    joined = "".join(value_tokens)
    if not (joined.isascii() and joined.isprintable()) or "_" in joined:
        return None
    total = sum(values)
    if total - total != 0:
        for k in compress(count(), map(ne, map(sub, values, values), repeat(0.0))):
            value = go_float(value_tokens[k])
            if value is None:
                return None  # e.g. out of range; the judge names the line
            values[k] = value
    check_time(1)
    samples = _samples(list(compress(names, regular)), list(compress(labelsets, regular)), values)
    check_time(1)

    # Families, in line order: a run of regular lines with one name joins a family at
    # once; every other line (comment, blank, another layout) is read on its own.
    # A run starts where a regular line follows another line or another name.
    starts = map(is_not, names, [None, *names[:-1]])
    after_other = map(not_, [False, *regular[:-1]])
    breaks = map(or_, map(not_, regular), map(or_, starts, after_other))
    events = list(compress(count(), breaks))
    events.append(n)
    assembler = Assembler(om=False)
    pending: Pending | None = None
    metadata_get = cache.metadata.young.get
    at = 0  # the next regular sample
    for e in range(len(events) - 1):
        k = events[e]
        if not e % CHECK_EVERY_LINES:
            check_time(k + 1)
        if regular[k]:
            end = at + events[e + 1] - k
            name = names[k]
            if pending is None or name not in pending.allowed:
                pending = assembler.open_for_sample(name, k + 1)
            pending.samples.extend(samples[at:end])
            at = end
            continue
        line = lines[k]
        fields = metadata_get(line)
        if fields is None:
            first = line.lstrip(" \t")[:1]
            if not first:
                continue
            if first != "#":
                # Another layout (a timestamp, tabs, ...): the general lexer reads it.
                sample = Sample(*parse_text_line(line, k + 1))
                if _odd_of(sample.labels):  # type: ignore[arg-type]  # the lexer's Labels
                    return None
                if pending is None or sample.name not in pending.allowed:
                    pending = assembler.open_for_sample(sample.name, k + 1)
                pending.samples.append(sample)
                continue
            fields = text_comment_fields(line, k + 1, cache)
        if fields[0]:
            pending = assembler.metadata(fields, k + 1)
    return assembler.finish(), assembler.families


def _series_of(
    heads: tuple[str, ...], cache: LabelCache, remember: bool
) -> tuple[list[Any], list[Any]] | None:
    """The (name, Labels) of every head: None where the line is not a sample in the
    usual layout (a comment, a blank line, another spelling). Looked up in the
    endpoint's cache, then in the process's (SHARED: replicas share their series),
    and only then split at `{` with each distinct name and label text validated once.
    None for the whole payload if something is doubtful (the judge decides)."""
    n = len(heads)
    own = cache.series
    shared = SHARED.series
    hits: list[Any]
    if own.young or own.aging:
        hits = list(map(own.young.get, heads))
        if own.aging:
            for k in compress(count(), map(is_, hits, repeat(None))):
                hits[k] = own.promote(heads[k])
        misses = list(compress(count(), map(is_, hits, repeat(None))))
    else:
        hits = [None] * n
        misses = list(range(n))
    if misses and (shared.young or shared.aging):
        if len(misses) == n:
            hits = list(map(shared.young.get, heads))
        else:
            for k in misses:
                hits[k] = shared.young.get(heads[k])
        if shared.aging:
            for k in compress(count(), map(is_, hits, repeat(None))):
                hits[k] = shared.promote(heads[k])
        learned = [k for k in misses if hits[k] is not None]
        if remember and learned:
            own.update(map(heads.__getitem__, learned), map(hits.__getitem__, learned))
        misses = list(compress(count(), map(is_, hits, repeat(None))))
    if not misses:
        names, labelsets = (list(column) for column in zip(*hits, strict=True))
        return names, labelsets
    miss_heads = heads if len(misses) == n else list(map(heads.__getitem__, misses))
    if any(map(str.endswith, miss_heads, repeat("{"))):
        return None  # `x{ 1`: a name and no label text; the judge explains
    raw_names, _, rests = zip(*map(str.partition, miss_heads, repeat("{")), strict=True)
    valid = _valid_names(set(raw_names))
    label_map = _labels_of(set(rests), cache, remember)
    if any(map(_odd_of, label_map.values())):
        return None  # whether they are valid depends on their family: the judge decides
    found_names: list[Any] = list(map(valid.get, raw_names))
    found_labels: list[Any] = list(map(label_map.get, rests))
    if len(misses) == n:
        names, labelsets = found_names, found_labels
    else:
        names = [None] * n
        labelsets = [None] * n
        for k in compress(count(), map(is_not, hits, repeat(None))):
            names[k], labelsets[k] = hits[k]
        for j, k in enumerate(misses):
            names[k] = found_names[j]
            labelsets[k] = found_labels[j]
    good = list(
        map(and_, map(is_not, found_names, repeat(None)), map(is_not, found_labels, repeat(None)))
    )
    if any(good):
        new_heads = list(compress(miss_heads, good))
        new_series = list(
            zip(compress(found_names, good), compress(found_labels, good), strict=True)
        )
        shared.update(new_heads, new_series)
        if remember:
            own.update(new_heads, new_series)
    return names, labelsets


def _odd_of(labels: Labels | None) -> int:
    """Whether a label set has an `le` or `quantile` that is not a number (see ODD_LE)."""
    if labels is None or ("le" not in labels and "quantile" not in labels):
        return 0
    return labels._odd


_known_names: dict[str, str] = {}


def forget_known_names() -> None:
    """Forget the metric names validated so far (`parser.forget_shared`)."""
    _known_names.clear()


def _valid_names(raw: set[str]) -> dict[str, str]:
    """The valid metric names among `raw`, each mapped to its interned self."""
    known = _known_names
    out = {}
    for name in raw:
        hit = known.get(name)
        if hit is None:
            if metric_name_match(name) is None:
                continue
            if len(known) >= 100_000:
                known.clear()
            hit = known[name] = sys.intern(name)
        out[name] = hit
    return out


def _labels_of(rests: set[str], cache: LabelCache, remember: bool) -> dict[str, Labels | None]:
    """Labels for each distinct canonical label text; None for a text that is not one."""
    store = cache.labels
    young_get = store.young.get
    shared = SHARED.labels
    out: dict[str, Labels | None] = {"": EMPTY_LABELS}
    new: set[str] = set()
    seen: dict[str, Labels] = {}  # found in SHARED: the endpoint's cache learns them
    rests.discard("")  # no `{`: no labels
    for rest in rests:
        labels = young_get(rest)
        if labels is None:
            labels = store.promote(rest) if store.aging else None
            if labels is None:
                labels = shared.get(rest)
                if labels is None:
                    new.add(rest)
                else:
                    seen[rest] = labels
        out[rest] = labels
    if new:
        found = labels_of_texts(new)
        out.update(found)
        keep: dict[str, Labels] = {
            rest: labels
            for rest, labels in found.items()
            if labels is not None and not _odd_of(labels)
        }
        shared.update(keep, keep.values())
        seen.update(keep)
    if remember and seen:
        store.update(seen, seen.values())
    return out


_new = object.__new__
_set_name = Sample.__dict__["name"].__set__
_set_labels = Sample.__dict__["labels"].__set__
_set_value = Sample.__dict__["value"].__set__
_set_timestamp = Sample.__dict__["timestamp"].__set__


def _samples(names: list[Any], labelsets: list[Any], values: list[float]) -> list[Sample]:
    """Samples without timestamps, built slot by slot in C (a frozen dataclass's __init__
    pays for object.__setattr__ on every field)."""
    samples = list(map(_new, repeat(Sample, len(names))))
    deque(map(_set_name, samples, names), 0)
    deque(map(_set_labels, samples, labelsets), 0)
    deque(map(_set_value, samples, values), 0)
    deque(map(_set_timestamp, samples, repeat(None)), 0)
    return samples


def _no_check(line: int) -> None:
    return None
