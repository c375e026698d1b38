"""A strict, fast parser for the Prometheus text format 0.0.4 and OpenMetrics 1.0 text.

    families = parse(body, cache=cache_for_this_endpoint)

Any malformed line rejects the whole payload with ExpositionError(line, message)
and nothing from it is returned; no other exception escapes for str or bytes
input. The line is the first offending one.

Text format: exactly what the format's specification allows where Prometheus' own
parser (`promtool check metrics`) agrees, and nothing that either refuses:

* any run of blanks and tabs between tokens, also inside `{...}` and at the start
  of a line; a blank only where two tokens would merge (`x{a="b"}1` and `x-1` are
  samples); `#HELP x doc` is HELP metadata, `# x HELP y` a plain comment;
* values as Go's ParseFloat reads them (`1e3`, `.5`, `NaN`, `nan`, `+Inf`, `-inf`,
  `Infinity`), not `1_000`, hex, non-ASCII digits, a signed NaN or a number out of
  float64 range; timestamps integer milliseconds within int64;
* label values quoted, with only the escapes `\\\\`, `\\"` and `\\n` (any other
  character, NUL and CR included, is itself); HELP text with `\\\\` and `\\n`;
  TYPE one of counter, gauge, histogram, summary, untyped;
* in a histogram every `le`, in a summary every `quantile`, must be a number;
* the last line ends with a line feed;
* refused although promtool accepts them, because the specification forbids them:
  a family's lines that are not one uninterrupted group, HELP or TYPE after the
  family's samples or given twice, `# HELP` or `# TYPE` without what must follow,
  a TYPE in another case (`Gauge`), label names starting `__` (reserved),
  a repeated label name, bytes that are not UTF-8;
* refused although the specification says trailing whitespace is ignored, because
  promtool refuses it (prometheus/common#33): blanks after a sample's value or
  timestamp, or after a TYPE.

Semantic faults that leave the text format valid (a histogram without a `+Inf`
bucket, a negative counter) do not reject: they are listed in `Family.problems`.
So does a series listed twice (the same name, label set in any order, and timestamp):
it is kept once, from its first line, with a problem naming its lines, as Prometheus
keeps the first sample and drops the rest (promtool and prometheus_client accept it).
OpenMetrics (`openmetrics=True`, see `inventory.exposition.openmetrics`) follows
its specification, where such faults reject the exposition; a series repeated within
one metric point (on adjacent lines: anywhere else it interleaves metrics, which is
rejected) is kept once with the same problem.

Shape differences from prometheus_client on input both accept:

* consecutive samples of one name without metadata form one `unknown` family
  (prometheus_client yields one single-sample family per line);
* a text-format counter declared without `_total` keeps its sample names
  (prometheus_client renames them to `<name>_total`);
* text-format `<base>_created` gauge families written right after their
  counter/histogram/summary are folded into that family, as in OpenMetrics;
* HELP text has surrounding whitespace stripped (as prometheus_client does);
* a text-format `untyped` TYPE gives type `unknown` (as prometheus_client does).

Speed: a text payload is read in three ways, fastest first.

* `inventory.exposition.templates`: laid out as the endpoint's last scrape (the
  usual case), it is checked against that validated payload in bulk and only
  values that changed become new Samples.
* `bulk.parse_bulk`: every line in the layout client libraries write
  (`name{labels} value`) is split, looked up and converted with C-level `map`
  calls over all lines at once; each distinct name and label text is validated
  once (and remembered in the LabelCache for the next scrape); other lines are
  read one by one. Anything doubtful makes it give up.
* `_parse_lines`: one line after the other with the general lexer; it is the
  judge, and it names the first offending line.

Validated label texts, series (`name{labels}`) and metadata lines are also kept
process-wide (`model.SHARED`, bounded): what a text means does not depend on the
endpoint that sent it, and replicas of a fleet send the same label sets, so the
first scrape of most endpoints after a start finds them there. `forget_shared()`
empties those tables (benchmarks use it to measure a payload never seen before).
The garbage collector is held off during a text parse and run over the young
generation once at its end (a parse allocates no reference cycles).
"""

from __future__ import annotations

import gc
from typing import Any

from inventory.exposition.assembler import (
    CHECKED_TYPES,
    Assembler,
    Pending,
)
from inventory.exposition.budget import (
    CHECK_EVERY_LINES,
    ParseBudget,
    ParseDeadlineExceeded,
    ParseStopped,
    SampleLimitExceeded,
)
from inventory.exposition.bulk import Parsed, forget_known_names, parse_bulk
from inventory.exposition.checks import (
    cap,
    family_problems,
    has_repeats,
    repeat_problem,
    series_point,
)
from inventory.exposition.lexer import (
    parse_text_line,
    text_comment_fields,
)
from inventory.exposition.model import (
    EMPTY_LABELS,
    ODD_LE,
    ODD_QUANTILE,
    ExpositionError,
    Family,
    LabelCache,
    Labels,
    Sample,
    excerpt,
    fail,
    forget_shared_tables,
)
from inventory.exposition.openmetrics import parse_openmetrics
from inventory.exposition.templates import PayloadTemplate

__all__ = [
    "EMPTY_LABELS",
    "ExpositionError",
    "Family",
    "LabelCache",
    "Labels",
    "ParseBudget",
    "ParseDeadlineExceeded",
    "ParseStopped",
    "Sample",
    "SampleLimitExceeded",
    "forget_shared",
    "parse",
]


def parse(
    text: str | bytes | bytearray | memoryview,
    *,
    openmetrics: bool = False,
    cache: LabelCache | None = None,
    fast: bool = True,
    budget: ParseBudget | None = None,
) -> list[Family]:
    """Parse a whole exposition; raise ExpositionError on the first malformed line.

    Pass the same `cache` for every scrape of one endpoint: label sets seen
    before are then looked up instead of re-validated, and a payload laid out
    like the last one is checked against it in bulk (see templates).
    `fast=False` reads a text payload line by line with the general lexer only
    (the judge the fast paths must agree with: for tests and debugging).
    `budget` stops the parse at the first sample past its limit and once its deadline
    has passed (see budget: SampleLimitExceeded, ParseDeadlineExceeded).
    """
    if budget is not None:
        budget.check_time(1)
    body = _as_text(text)
    remember = cache is not None
    if cache is None:
        cache = LabelCache()
    if openmetrics:
        return parse_openmetrics(body, cache, budget)
    lines = body.split("\n")
    del body
    if budget is not None:
        cut = budget.text_limit_line(lines)
        if cut is not None:
            # Read only what comes before the first sample past the limit, as a reader
            # of one line after the other would: an error there is reported first.
            # Nothing of it is remembered; the endpoint's cache is left as it was.
            del lines[cut:]
            lines.append("")
            _parse_guarded(lines, LabelCache(), False, budget)
            assert budget.max_samples is not None  # a cut is only found under a limit
            raise SampleLimitExceeded(cut + 1, budget.max_samples)
    if not fast:
        return _without_repeats(*_parse_lines(lines, LabelCache(), budget), lines)
    if cache.template is not None:
        families = cache.template.reparse(lines, cache)
        if families is not None:
            return families
    # A full parse allocates tens of thousands of objects and no reference cycles: the
    # collector passes over them once, at the end, instead of dozens of times during
    # it, each pass a step towards a full collection (in a scrape worker whose caches
    # hold millions of objects, those cost as much as the parse itself).
    return _parse_guarded(lines, cache, remember, budget)


def _parse_guarded(
    lines: list[str], cache: LabelCache, remember: bool, budget: ParseBudget | None
) -> list[Family]:
    if not gc.isenabled():
        return _parse_text(lines, cache, remember, budget)
    gc.disable()
    try:
        return _parse_text(lines, cache, remember, budget)
    finally:
        gc.enable()
        gc.collect(0)


def _parse_text(
    lines: list[str], cache: LabelCache, remember: bool, budget: ParseBudget | None = None
) -> list[Family]:
    """A text payload the layout template could not read: in bulk, else line by line."""
    try:
        parsed = parse_bulk(lines, cache, remember, budget) if lines[-1] == "" else None
    except ParseStopped:
        raise
    except Exception as exc:  # pragma: no cover - the fuzz tests keep this unreachable
        raise ExpositionError(1, f"internal parser error ({type(exc).__name__})") from exc
    if parsed is None:
        if budget is not None:
            budget.check_time(1)
        parsed = _parse_lines(lines, cache, budget)
    families = _without_repeats(*parsed, lines)
    pendings = parsed[1]
    if remember:
        # A layout only pays off once the payload keeps its shape: building one for an
        # endpoint whose line count changes every scrape would cost more than it saves.
        # Bounded like the cache's other maps: a layout holds one entry per line. A
        # payload with a repeated series gets none (its samples no longer match its lines).
        same_shape = len(lines) == cache.line_count
        cache.line_count = len(lines)
        cache.template = (
            PayloadTemplate.build(lines, families, pendings, cache.series.max_entries)
            if same_shape
            else None
        )
    return families


def _without_repeats(
    families: list[Family], pendings: list[Pending], lines: list[str]
) -> list[Family]:
    """`families` with each series that is listed twice (same name, label set and
    timestamp) kept once, from its first line, and a problem naming the lines: what
    Prometheus does with such a scrape is keep the first sample and drop the rest."""
    samples = [sample for family in families for sample in family.samples]
    if not has_repeats(samples):
        return families
    numbers = [k for k, line in enumerate(lines, 1) if line.lstrip(" \t")[:1] not in ("", "#")]
    keys = list(map(series_point, samples))
    lines_of: dict[Any, list[int]] = {}
    for key, number in zip(keys, numbers, strict=True):
        lines_of.setdefault(key, []).append(number)
    out = []
    at = 0
    for family, pending in zip(families, pendings, strict=True):
        own = keys[at : at + len(family.samples)]
        at += len(own)
        if all(len(lines_of[key]) == 1 for key in own):
            out.append(family)
            continue
        first: dict[Any, Sample] = {}
        for key, sample in zip(own, family.samples, strict=True):
            first.setdefault(key, sample)
        kept = tuple(first.values())
        found = [
            repeat_problem(first[key], lines_of[key]) for key in first if len(lines_of[key]) > 1
        ]
        type_ = family.type
        if type_ in CHECKED_TYPES:
            found += family_problems(type_, pending.raw, kept, om=False)
        out.append(Family(family.name, type_, family.help, family.unit, kept, cap(found)))
    return out


def _as_text(payload: str | bytes | bytearray | memoryview) -> str:
    if isinstance(payload, str):
        text = payload
        if not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                line = text.count("\n", 0, exc.start) + 1
                raise ExpositionError(
                    line, "lone surrogate character (not valid Unicode)"
                ) from None
        return text
    if isinstance(payload, (bytes, bytearray, memoryview)):
        data = bytes(payload)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - data.rfind(b"\n", 0, exc.start)
            raise ExpositionError(line, f"invalid UTF-8 at column {column}") from None
    raise TypeError(f"parse() wants str or bytes, not {type(payload).__name__}")


# --- the judge: one line after the other ------------------------------------------------------


def _parse_lines(lines: list[str], cache: LabelCache, budget: ParseBudget | None = None) -> Parsed:
    assembler = Assembler(om=False)
    pending: Pending | None = None
    lineno = 0
    check_time = None if budget is None or budget.deadline is None else budget.check_time
    try:
        for lineno, line in enumerate(lines, 1):
            if check_time is not None and not lineno % CHECK_EVERY_LINES:
                check_time(lineno)
            first = line.lstrip(" \t")[:1]
            if not first:
                continue
            if first == "#":
                fields = text_comment_fields(line, lineno, cache)
                if fields[0]:
                    pending = assembler.metadata(fields, lineno)
                continue
            name, labels, value, timestamp = parse_text_line(line, lineno)
            if pending is None or name not in pending.allowed:
                pending = assembler.open_for_sample(name, lineno)
            if labels._odd:
                _check_odd(pending, name, labels, lineno)
            pending.samples.append(Sample(name, labels, value, timestamp))
        if lines[-1].strip(" \t"):
            fail(len(lines), "the last line does not end with a line feed")
        return assembler.finish(), assembler.families
    except ExpositionError:
        raise
    except Exception as exc:  # pragma: no cover - the fuzz tests keep this unreachable
        raise ExpositionError(lineno, f"internal parser error ({type(exc).__name__})") from exc


def _check_odd(pending: Pending, name: str, labels: Labels, lineno: int) -> None:
    """A histogram's `le` and a summary's `quantile` must be numbers (Prometheus reads them)."""
    if name == pending.created:
        return  # a folded `_created` gauge: its own family in the text format
    if pending.type == "histogram" and labels._odd & ODD_LE:
        label, value = "le", labels["le"]
    elif pending.type == "summary" and labels._odd & ODD_QUANTILE:
        label, value = "quantile", labels["quantile"]
    else:
        return
    fail(
        lineno,
        f"{label} label {excerpt(value)} is not a number (in {pending.type} "
        f"{excerpt(pending.raw)})",
    )


def forget_shared() -> None:
    """Forget every label text, metadata line and name this process has validated, so
    the next parse meets its payload as if for the first time (benchmarks measure a
    cold parse this way; production never needs it)."""
    forget_shared_tables()
    forget_known_names()
