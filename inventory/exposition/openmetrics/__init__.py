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

Inside: `tokens` reads one line (the ABNF: label sets, numbers, timestamps, exemplars),
`reader` holds the families' state (the semantic rules, metric points, histograms).
"""

from __future__ import annotations

from inventory.exposition.budget import CHECK_EVERY_LINES, ParseBudget, SampleLimitExceeded
from inventory.exposition.model import ExpositionError, Family, LabelCache, fail
from inventory.exposition.openmetrics.reader import Reader

__all__ = ["parse_openmetrics"]


def parse_openmetrics(
    text: str, cache: LabelCache, budget: ParseBudget | None = None
) -> list[Family]:
    if not text:
        fail(1, "empty payload: missing '# EOF' (required in OpenMetrics)")
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the line feed after "# EOF"
    reader = Reader()
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
