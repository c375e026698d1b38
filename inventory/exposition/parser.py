"""A strict, fast parser for the Prometheus text format 0.0.4 and OpenMetrics 1.0 text.

    families = parse(body, cache=cache_for_this_endpoint)

Any malformed line rejects the whole payload with ExpositionError(line, message)
and nothing from it is returned; no other exception escapes for str or bytes
input. Semantic faults that leave the syntax intact (a histogram without a
`+Inf` bucket, a negative counter) do not reject: they are listed in
`Family.problems`.

Stricter than prometheus_client's text parser, on purpose (each of these is
accepted there and rejected here):

* tokens are separated by exactly one space; no leading, trailing or doubled
  whitespace, no tabs, no spaces inside `{...}`, no CR (`\\r\\n` line ends);
* values are decimal numbers or `NaN`, `+Inf`, `-Inf` (not `infinity`, `1_000`,
  hex, non-ASCII digits or out-of-range numbers); text timestamps are integer
  milliseconds;
* label values must be quoted (`x{tenant=} 5` is an error, not `x 5`), use only
  the escapes `\\\\`, `\\"` and `\\n`, and contain no NUL; label names are unique
  per sample and do not start with `__`; the `{"name"}` quoted-name syntax of
  newer formats is not supported;
* HELP text uses only the `\\\\` and `\\n` escapes; `#HELP`, `# HELP` without a
  name and any other comment with a HELP or TYPE word in it are errors rather
  than comments (prometheus_client reads some of them as metadata);
  TYPE must be one of counter, gauge, histogram, summary, untyped;
* a family's lines are contiguous; HELP and TYPE come before its samples and
  at most once each; no sample name belongs to two families (see
  `inventory.exposition.assembler` for the ownership rule);
* bytes must be valid UTF-8.

Shape differences from prometheus_client on input both accept:

* consecutive samples of one name without metadata form one `unknown` family
  (prometheus_client yields one single-sample family per line);
* a text-format counter declared without `_total` keeps its sample names
  (prometheus_client renames them to `<name>_total`);
* text-format `<base>_created` gauge families written right after their
  counter/histogram/summary are folded into that family, as in OpenMetrics;
* HELP text has surrounding whitespace stripped (as prometheus_client does);
* a text-format `untyped` TYPE gives type `unknown` (as prometheus_client does).

OpenMetrics (`openmetrics=True`, see `inventory.exposition.openmetrics` for its
rules) differs from prometheus_client's OpenMetrics parser in that value-level
faults it raises on (a histogram that is not cumulative, an info value other
than 1, a negative counter, ...) become `Family.problems` here, as in the text
format; timestamps are plain float seconds; exemplars are validated and then
dropped (samples carry no exemplar field); and mixing `1` and `1e0` timestamp
spellings parses instead of crashing with TypeError.

Speed: when the payload's lines are laid out as in the endpoint's last scrape
(the usual case), `inventory.exposition.templates` checks them against that
validated payload in bulk and only builds Samples for values that changed.
Otherwise, the per-line work on a warm LabelCache is one dict lookup of the text
before the value, one of the value text within the payload, and building the
Sample. Value tokens that float() accepts are only checked for Prometheus
spelling as a batch at the end; if that check (or anything else) fails, the
payload is read again checking every value as it comes, so the error still
names the first bad line.
"""

from __future__ import annotations

from itertools import repeat

from inventory.exposition.assembler import HELP, Assembler, Metadata, Pending, metadata_fields
from inventory.exposition.lexer import (
    check_metric_name,
    parse_text_sample,
    parse_value,
    plausible_numbers,
    unescape_help,
)
from inventory.exposition.model import (
    EMPTY_LABELS,
    ExpositionError,
    Family,
    LabelCache,
    Labels,
    Sample,
    SampleTwin,
    excerpt,
)
from inventory.exposition.openmetrics import parse_openmetrics
from inventory.exposition.templates import PayloadTemplate

__all__ = [
    "EMPTY_LABELS",
    "ExpositionError",
    "Family",
    "LabelCache",
    "Labels",
    "Sample",
    "parse",
]

_EMPTY: frozenset[str] = frozenset()


def parse(
    text: str | bytes | bytearray | memoryview,
    *,
    openmetrics: bool = False,
    cache: LabelCache | None = None,
) -> list[Family]:
    """Parse a whole exposition; raise ExpositionError on the first malformed line.

    Pass the same `cache` for every scrape of one endpoint: label sets seen
    before are then looked up instead of re-validated, and a payload laid out
    like the last one is checked against it in bulk (see templates).
    """
    body = _as_text(text)
    remember = cache is not None
    if cache is None:
        cache = LabelCache()
    if openmetrics:
        return parse_openmetrics(body, cache)
    lines = body.split("\n")
    if cache.template is not None:
        families = cache.template.reparse(lines, cache)
        if families is not None:
            return families
    parsed: tuple[list[Family], dict[str, float], list[Pending]] | None
    try:
        parsed = _parse_text(lines, cache, strict=False)
        if not plausible_numbers("".join(parsed[1])):
            parsed = None
    except ExpositionError:
        parsed = None
    if parsed is None:
        # Either the payload is bad or a value needs a closer look: read it again
        # checking every value as it comes, so the error names the first bad line.
        parsed = _parse_text(lines, cache, strict=True)
    families, _, pendings = parsed
    if remember:
        # A layout only pays off once the payload keeps its shape: building one for an
        # endpoint whose line count changes every scrape would cost more than it saves.
        # Bounded like the cache's other maps: a layout holds one entry per line.
        same_shape = len(lines) == cache.line_count
        cache.line_count = len(lines)
        cache.template = (
            PayloadTemplate.build(lines, families, pendings, cache.series.max_entries)
            if same_shape
            else None
        )
    return families


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
    elif isinstance(payload, (bytes, bytearray, memoryview)):
        data = bytes(payload)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - data.rfind(b"\n", 0, exc.start)
            raise ExpositionError(line, f"invalid UTF-8 at column {column}") from None
    else:
        raise TypeError(f"parse() wants str or bytes, not {type(payload).__name__}")
    for char, what in (("\x00", "NUL character"), ("\r", "carriage return (CRLF line ends?)")):
        at = text.find(char)
        if at >= 0:
            raise ExpositionError(text.count("\n", 0, at) + 1, f"{what} is not allowed")
    return text


def _parse_text(
    lines: list[str], cache: LabelCache, *, strict: bool
) -> tuple[list[Family], dict[str, float], list[Pending]]:
    """Read a text-format payload; return its families, its distinct value tokens
    and the Assembler's record of each family (for PayloadTemplate.build).

    With strict=False, value tokens that float() accepts are only checked as a
    batch by the caller (see plausible_numbers).
    """
    assembler = Assembler(om=False)
    allowed = _EMPTY
    append = None
    values: dict[str, float] = {}
    values_get = values.get
    series = cache.series
    series_get = series.young.get
    metadata_get = cache.metadata.young.get
    last_line = len(lines)
    lineno = 0
    try:
        # Every line is split at its last space up front, in C. For a sample whose
        # series was seen before, the text before the space is all the lookup needs;
        # anything else (comments, blank lines, new series) misses and is read below.
        numbered = enumerate(map(str.rpartition, lines, repeat(" ")), 1)
        for lineno, (head, _, token) in numbered:
            hit = series_get(head)
            if hit is None and (not series.aging or (hit := series.promote(head)) is None):
                line = lines[lineno - 1]
                if line[:1] == "#":
                    fields = metadata_get(line)
                    if fields is None:
                        fields = _comment(line, lineno, cache)
                        metadata_get = cache.metadata.young.get
                    if fields[0]:
                        following = None
                        if fields[0] == HELP and lineno < last_line:
                            # A known TYPE line for the same family usually follows: take
                            # it in this same step instead of another turn of the loop.
                            following = metadata_get(lines[lineno])
                        if following is not None and following[1] is fields[1]:
                            next(numbered)
                            pending = assembler.metadata_pair(fields, following, lineno)
                        else:
                            pending = assembler.metadata(fields, lineno)
                        allowed = pending.allowed
                        append = pending.samples.append
                    continue
                if not line:
                    continue
                sample = Sample(*parse_text_sample(line, lineno, cache))
                series_get = series.young.get
                if sample.name not in allowed:
                    pending = assembler.open_for_sample(sample.name, lineno)
                    allowed = pending.allowed
                    append = pending.samples.append
                append(sample)  # type: ignore[misc]
                continue
            name, labels = hit
            value = values_get(token)
            if value is None:
                try:
                    value = float(token)
                except ValueError:
                    value = None
                # NaN, infinities and anything float() refuses are judged at once;
                # finite numbers are checked as a batch at the end (see parse()).
                if strict or value is None or value - value != 0:
                    value = parse_value(token, lineno)
                values[token] = value
            if name not in allowed:
                pending = assembler.open_for_sample(name, lineno)
                allowed = pending.allowed
                append = pending.samples.append
            twin = SampleTwin()
            twin.name = name
            twin.labels = labels
            twin.value = value
            twin.timestamp = None
            twin.__class__ = Sample  # type: ignore[assignment]  # same slots: see SampleTwin
            append(twin)  # type: ignore[misc, arg-type]  # append is set by now; twin is a Sample
        return assembler.finish(), values, assembler.families
    except ExpositionError:
        raise
    except Exception as exc:  # pragma: no cover - the fuzz tests keep this unreachable
        raise ExpositionError(lineno, f"internal parser error ({type(exc).__name__})") from exc


def _comment(line: str, lineno: int, cache: LabelCache) -> Metadata:
    """The fields of a `#` line not in the young cache generation (kind 0: a plain comment)."""
    fields = cache.metadata.promote(line) if cache.metadata.aging else None
    if fields is None:
        fields = _read_comment(line, lineno)
        cache.metadata.put(line, fields)
    return fields


_COMMENT: Metadata = (0, "", "", None)


def _read_comment(line: str, lineno: int) -> Metadata:
    """Validate a `#` line on its own."""
    for kind in ("HELP", "TYPE"):
        if line.startswith(f"# {kind} "):
            name, _, rest = line[7:].partition(" ")
            name = check_metric_name(name, lineno)
            if kind == "HELP":
                rest = unescape_help(rest.strip(), lineno, om=False)
            return metadata_fields(kind, name, rest, lineno, om=False)
    # Other readers take `#HELP x`, `#  HELP x` or even `#x HELP y` as metadata;
    # a comment that any of them could misread is refused instead of ignored.
    words = line[1:].split()
    for kind in ("HELP", "TYPE"):
        if kind in words or (words and words[0] == kind):
            raise ExpositionError(
                lineno, f"malformed {kind} line {excerpt(line)}: expected '# {kind} <name> …'"
            )
    return _COMMENT
