"""OpenMetrics 1.0: every rule of the specification, and prometheus_client as the oracle.

prometheus_client's `openmetrics.parser.text_string_to_metric_families` implements
the specification's rules strictly, so on every generated exposition we accept
exactly what it accepts (any exception it raises is a rejection: it is lazy and
raises KeyError and friends besides ValueError), and when both accept we read
the same families, samples, labels and values. Where it departs from the 1.0
specification we follow the specification: those breakages are tagged when
generated, left out of the comparison, and each has a hand-written case below.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.parser import text_string_to_metric_families as oracle

from inventory.exposition.parser import ExpositionError, Family, parse

CHECKS = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")),
    derandomize=not os.environ.get("FUZZ_RANDOM"),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

View = list[tuple[Any, ...]]


def _number(value: Any) -> tuple[str, float]:
    value = float(value)
    return ("nan", 0.0) if math.isnan(value) else ("num", value)


def our_view(families: list[Family]) -> View:
    return [
        (
            f.name,
            f.type,
            f.help.lstrip(" "),
            f.unit,
            [(s.name, dict(s.labels), _number(s.value), s.timestamp) for s in f.samples],
        )
        for f in families
    ]


def oracle_view(text: str) -> View | None:
    """The oracle's families, or None if it rejects the text (any exception)."""
    try:
        families = list(oracle(text))
    except Exception:  # noqa: BLE001 - any exception is the oracle's rejection
        return None
    return [
        (
            f.name,
            f.type,
            # It drops the blanks that open a HELP text (it splits metadata at runs of spaces).
            f.documentation.lstrip(" "),
            f.unit,
            [
                (
                    s.name,
                    dict(s.labels),
                    _number(s.value),
                    None if s.timestamp is None else float(s.timestamp),
                )
                for s in f.samples
            ],
        )
        for f in families
    ]


def ours(text: str) -> View | None:
    try:
        return our_view(parse(text, openmetrics=True))
    except ExpositionError:
        return None


# --- generating expositions ----------------------------------------------------------------

_letters = "abcdefghijklmnopqrstuvwxyz"
base_names = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_letters + "_:"),
    st.text(alphabet=_letters + "0123456789_:", max_size=5),
)
label_names = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_letters + "AB"),
    st.text(alphabet=_letters + "0123456789_", max_size=4),
)
raw_values = st.text(
    alphabet=st.one_of(
        st.sampled_from(' a#{}=,"\\\n\t\x00\r\u00e9'),
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"),
    ),
    max_size=6,
)
GAUGE_VALUES = [
    "0",
    "1",
    "-1",
    "1.5",
    "-2.5e3",
    "1e-3",
    ".5",
    "5.",
    "0042",
    "NaN",
    "nan",
    "+Inf",
    "-Inf",
    "inf",
    "+Infinity",
    "-INF",
]
TIMESTAMPS = ["0", "1", "5.5", "123", "1700000000", "1700000000.123"]


def _escape(value: str, unknown_escapes: bool) -> str:
    text = value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    # OpenMetrics keeps a backslash before any other character as it is.
    return text + "\\t\\z" if unknown_escapes else text


@dataclass
class Exposition:
    lines: list[str] = field(default_factory=list)
    # Tags of the breakages where the oracle departs from the 1.0 specification.
    spec_refuses: list[str] = field(default_factory=list)  # it accepts, the spec does not
    spec_accepts: list[str] = field(default_factory=list)  # it refuses a valid exposition
    eof: str = "# EOF\n"

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines) + self.eof


@st.composite
def labels_text(draw: st.DrawFn, labels: list[tuple[str, str]], unknown: bool = False) -> str:
    if not labels and draw(st.booleans()):
        return ""
    # Unknown escapes go in the metric's first own label (le, quantile and states come last).
    return (
        "{"
        + ",".join(f'{k}="{_escape(v, unknown and i == 0)}"' for i, (k, v) in enumerate(labels))
        + "}"
    )


@st.composite
def family_lines(draw: st.DrawFn, index: int) -> list[str]:
    type_ = draw(
        st.sampled_from(
            [
                "counter",
                "gauge",
                "histogram",
                "gaugehistogram",
                "summary",
                "info",
                "stateset",
                "unknown",
                "",
            ]
        )
    )
    base = f"{draw(base_names)}_f{index}"
    if type_ == "stateset":
        # Its name is also a label name: no colon, no reserved `__` start.
        base = "s" + base.replace(":", "_")
    unit = ""
    if type_ not in ("info", "stateset", "") and draw(st.booleans()):
        unit = "seconds"
        base += "_seconds"
    metadata = []
    if type_:
        metadata.append(f"# TYPE {base} {type_}")
    if type_ and draw(st.booleans()):
        metadata.append(f"# HELP {base} {_escape(draw(raw_values), draw(st.booleans()))}")
    if unit and draw(st.booleans()):
        metadata.append(f"# UNIT {base} {unit}")
    lines = list(draw(st.permutations(metadata)))
    # Several timestamped points per metric only where a point is one sample: the oracle
    # drops later points' samples whose series came before (see the departures below).
    stamped = draw(st.integers(0, 3)) == 0
    multipoint = type_ in ("gauge", "unknown", "")
    seen: set[frozenset[tuple[str, str]]] = set()
    for _ in range(draw(st.integers(0, 2))):
        names = draw(st.lists(label_names, max_size=2, unique=True))
        labels = [(n, draw(raw_values)) for n in names if n not in ("le", "quantile", base)]
        if frozenset(labels) in seen:
            continue  # one metric per label set
        seen.add(frozenset(labels))
        unknown = bool(labels) and draw(st.integers(0, 4)) == 0
        points = draw(st.integers(1, 2)) if stamped and multipoint else 1
        stamps = sorted(
            draw(
                st.lists(st.sampled_from(TIMESTAMPS), min_size=points, max_size=points, unique=True)
            ),
            key=float,
        )
        for stamp in stamps if stamped else [None]:
            suffix = f" {stamp}" if stamp else ""
            lines.extend(draw(point_lines(type_ or "unknown", base, labels, suffix, unknown)))
    return lines


def _ex(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)):
        return ""
    stamp = draw(st.sampled_from(["", " 1.5"]))
    return ' # {trace_id="' + draw(st.sampled_from(["abc", "", "x y"])) + '"} 0.5' + stamp


@st.composite
def point_lines(
    draw: st.DrawFn, type_: str, base: str, labels: list[tuple[str, str]], ts: str, unknown: bool
) -> list[str]:
    lab = draw(labels_text(labels, unknown))
    out = []
    if type_ == "counter":
        total = draw(st.sampled_from(["0", "1", "17.5", "1e3", "+Inf"]))
        out.append(f"{base}_total{lab} {total}{ts}{_ex(draw)}")
        if draw(st.booleans()):
            out.append(f"{base}_created{lab} 1700000000.5{ts}")
    elif type_ in ("histogram", "gaugehistogram"):
        bounds = sorted(
            set(draw(st.lists(st.sampled_from(["-1.0", "0.1", "1.0", "2.5", "10.0"]), max_size=3))),
            key=float,
        )
        cumulative = 0
        for bound in [*bounds, "+Inf"]:
            cumulative += draw(st.integers(0, 3))
            with_le = draw(labels_text([*labels, ("le", bound)], unknown))
            out.append(f"{base}_bucket{with_le} {cumulative}{ts}{_ex(draw)}")
        negative = bool(bounds) and bounds[0].startswith("-")
        if draw(st.booleans()):
            if type_ == "histogram":
                out.append(f"{base}_count{lab} {cumulative}{ts}")
                if not negative:
                    out.append(f"{base}_sum{lab} {draw(st.sampled_from(['0', '3.5', '1e2']))}{ts}")
                else:
                    out.pop()
            else:
                out.append(f"{base}_gcount{lab} {cumulative}{ts}")
                gsum = draw(st.sampled_from(["0", "3.5", "-1.5"] if negative else ["0", "2"]))
                out.append(f"{base}_gsum{lab} {gsum}{ts}")
        if type_ == "histogram" and draw(st.booleans()):
            out.append(f"{base}_created{lab} 1700000000{ts}")
    elif type_ == "summary":
        for quantile in draw(
            st.lists(st.sampled_from(["0", "0.5", "0.99", "1"]), max_size=2, unique=True)
        ):
            with_q = draw(labels_text([*labels, ("quantile", quantile)], unknown))
            out.append(f"{base}{with_q} {draw(st.sampled_from(['0', '1.5', 'NaN']))}{ts}")
        if draw(st.booleans()):
            out.append(f"{base}_count{lab} {draw(st.sampled_from(['0', '7']))}{ts}")
            out.append(f"{base}_sum{lab} {draw(st.sampled_from(['0', '2.5']))}{ts}")
    elif type_ == "info":
        out.append(f"{base}_info{lab} {draw(st.sampled_from(['1', '1.0']))}{ts}")
    elif type_ == "stateset":
        for state in draw(
            st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True)
        ):
            with_state = draw(labels_text([*labels, (base, state)], unknown))
            out.append(f"{base}{with_state} {draw(st.sampled_from(['0', '1', '1.0']))}{ts}")
    else:
        out.append(f"{base}{lab} {draw(st.sampled_from(GAUGE_VALUES))}{ts}")
    return out


# Breakages both we and the oracle must judge alike (the oracle decides); the one it
# departs on (runs of spaces in metadata, which it splits over) is returned as a tag.
def _break(draw: st.DrawFn, lines: list[str], at: int) -> str | None:
    line = lines[at]
    how = draw(
        st.sampled_from(
            [
                "negative",
                "nan",
                "fraction",
                "drop",
                "swap",
                "two_spaces",
                "tab",
                "trailing",
                "comma",
                "duplicate",
                "blank",
                "comment",
                "untyped",
                "inf_le",
                "value",
                "stamp",
                "unit",
                "backwards",
                "eof_text",
                "reserved",
                "exemplar",
            ]
        )
    )
    if how in ("negative", "nan", "fraction", "value") and " " in line and not line.startswith("#"):
        head, rest = line.split(" ", 1)
        tail = rest.split(" ", 1)[1] if " " in rest else ""
        bad = {
            "negative": "-1",
            "nan": "NaN",
            "fraction": "0.5",
            "value": draw(st.sampled_from(["1_0", "0x1", "one", "1e", "in"])),
        }[how]
        lines[at] = f"{head} {bad}" + (f" {tail}" if tail else "")
    elif how == "drop":
        del lines[at]
    elif how == "swap" and at + 1 < len(lines):
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    elif how == "two_spaces":
        lines[at] = line.replace(" ", "  ", 1)
        if line.startswith("#"):
            return "metadata_spaces"
    elif how == "tab":
        lines[at] = line.replace(" ", "\t", 1)
        if "} " in line and line.index(" ") == line.index("} ") + 1:
            return "glued_value"  # it skips the character after `}` unread
    elif how == "trailing":
        lines[at] = line + " "
    elif how == "comma":
        lines[at] = line.replace('"}', '",}', 1)
    elif how == "duplicate":
        lines.insert(at, line)
    elif how == "blank":
        lines.insert(at, "")
    elif how == "comment":
        lines.insert(at, draw(st.sampled_from(["# a comment", "#", "# EOF ", "# HELP"])))
    elif how == "untyped":
        lines[at] = line.replace(" unknown", " untyped").replace(" gauge", " untyped")
    elif how == "inf_le":
        lines[at] = line.replace(
            '"+Inf"',
            '"' + draw(st.sampled_from(["+inf", "Inf", "inf", "NaN", "x", "+Infinity"])) + '"',
        )
    elif how == "stamp" and not line.startswith("#"):
        lines[at] = line + " " + draw(st.sampled_from(["1", "1e3", "x", "NaN", "+Inf", "2.5"]))
    elif how == "unit":
        lines.insert(
            at,
            "# UNIT "
            + (line.split(" ")[2] if line.startswith("# ") and line.count(" ") > 2 else "u_x")
            + " bytes",
        )
    elif how == "backwards" and not line.startswith("#"):
        lines.insert(at + 1, line + " 5")
        lines[at] = line + " 9"
    elif how == "eof_text":
        lines.insert(at, "# EOF")
    elif how == "reserved":
        lines[at] = line.replace("{", '{__x="1",', 1)
    elif how == "exemplar" and not line.startswith("#"):
        lines[at] = line + ' # {a="' + "x" * draw(st.sampled_from([1, 130])) + '"} 1'
    return None


# Breakages where the oracle departs from the specification (see the hand-written cases).
def _depart(draw: st.DrawFn, exposition: Exposition) -> None:
    lines = exposition.lines
    samples = [i for i, line in enumerate(lines) if not line.startswith("#")]
    metadata = [i for i, line in enumerate(lines) if line.startswith("#")]
    labelled = [i for i in samples if '="' in lines[i]]
    how = draw(
        st.sampled_from(
            [
                "blank_in_labels",
                "colon_label",
                "space_before_brace",
                "glued_value",
                "metadata_spaces",
                "signed_nan",
                "overflow",
                "escaped_quote_in_exemplar",
            ]
        )
    )
    if how == "blank_in_labels" and labelled:
        at = draw(st.sampled_from(labelled))
        lines[at] = lines[at].replace("{", "{ ", 1)
    elif how == "colon_label" and labelled:
        at = draw(st.sampled_from(labelled))
        lines[at] = lines[at].replace("{", '{a:b="1",', 1)
    elif how == "space_before_brace" and labelled:
        at = draw(st.sampled_from(labelled))
        lines[at] = lines[at].replace("{", " {", 1)
    elif how == "glued_value" and labelled:
        at = draw(st.sampled_from(labelled))
        head, _, tail = lines[at].partition("} ")
        if not tail:
            return
        lines[at] = head + "}\t" + tail
    elif how == "metadata_spaces" and metadata:
        at = draw(st.sampled_from(metadata))
        lines[at] = lines[at].replace(" ", "  ", 2).replace("  ", " ", 1)
    elif how in ("signed_nan", "overflow"):
        lines.append(f"departure_gauge {'+nan' if how == 'signed_nan' else '1e400'}")
    elif how == "escaped_quote_in_exemplar":
        lines.append("# TYPE departure_c counter")
        lines.append('departure_c_total 1 # {a="x\\"y"} 1')
        exposition.spec_accepts.append(how)
        return
    else:
        return
    exposition.spec_refuses.append(how)


@st.composite
def expositions(draw: st.DrawFn) -> Exposition:
    exposition = Exposition()
    for index in range(draw(st.integers(0, 4))):
        exposition.lines.extend(draw(family_lines(index)))
    kind = draw(st.integers(0, 9))
    if kind < 4 and exposition.lines:
        for _ in range(draw(st.integers(1, 2))):
            if exposition.lines:
                at = draw(st.integers(0, len(exposition.lines) - 1))
                tag = _break(draw, exposition.lines, at)
                if tag is not None:
                    exposition.spec_refuses.append(tag)
    elif kind < 6:
        _depart(draw, exposition)
    elif kind == 6:
        exposition.eof = draw(
            st.sampled_from(["# EOF", "# EOF\n\n", "", "# EOF\nx 1\n", "# EOF \n"])
        )
    return exposition


@CHECKS
@given(expositions())
def test_openmetrics_accepts_exactly_what_the_oracle_accepts(exposition: Exposition) -> None:
    text = exposition.text()
    mine = ours(text)
    if exposition.spec_refuses:
        assert mine is None, f"accepted what OpenMetrics 1.0 forbids: {exposition.spec_refuses}"
        return
    if exposition.spec_accepts:
        assert mine is not None, f"refused a valid exposition: {exposition.spec_accepts}"
        return
    assert mine == oracle_view(text), text


# --- hand-written cases, one per rule -----------------------------------------------------

H = "# TYPE h histogram\n"
OK = [
    ("exposition_ends_with_eof_and_an_optional_line_feed", "a 1\n# EOF"),
    ("an_empty_metricset_is_valid", "# EOF\n"),
    ("unknown_escapes_are_kept_in_label_values", 'a{b="x\\z\\t"} 1\n# EOF\n'),
    ("unknown_escapes_are_kept_in_help_text", "# HELP a he\\tl\\fp\n# EOF\n"),
    ("nul_is_a_character_of_help_text", "# HELP a x\x00y\n# EOF\n"),
    ("nul_and_cr_are_characters_of_label_values", 'a{b="\x00\r"} 1\n# EOF\n'),
    ("numbers_are_case_insensitive_inf_infinity_nan", "a NaN\nb +INF\nc -infinity\nd nan\n# EOF\n"),
    ("leading_zeros_are_fine", "a 0042\n# EOF\n"),
    ("timestamps_are_decimal_seconds", "# TYPE a gauge\na 1 1.5\na 2 1.5e3\n# EOF\n"),
    ("timestamps_may_repeat_within_a_metric", "# TYPE a gauge\na 1 5\na 2 5\n# EOF\n"),
    ("counter_total_may_be_plus_inf", "# TYPE a counter\na_total +Inf\n# EOF\n"),
    ("counter_with_created", "# TYPE a counter\na_total 1\na_created 1.7e9\n# EOF\n"),
    ("exemplar_on_counter_total", '# TYPE a counter\na_total 1 # {t="x"} 0.5 123\n# EOF\n'),
    (
        "exemplar_label_value_may_hold_an_escaped_quote",
        '# TYPE a counter\na_total 1 # {t="x\\"y"} 1\n# EOF\n',
    ),
    (
        "exemplar_labels_of_exactly_128_characters",
        '# TYPE a counter\na_total 1 # {t="' + "x" * 127 + '"} 1\n# EOF\n',
    ),
    (
        "histogram_with_sum_count_created_and_exemplars",
        H
        + 'h_bucket{le="1.0"} 0 # {} 0.5\nh_bucket{le="+Inf"} 2\n'
        + "h_count 2\nh_sum 3\nh_created 1\n# EOF\n",
    ),
    ("histogram_buckets_only", H + 'h_bucket{le="+Inf"} 0\n# EOF\n'),
    (
        "histogram_with_negative_thresholds_and_no_sum",
        H + 'h_bucket{le="-1"} 0\nh_bucket{le="+Inf"} 1\n# EOF\n',
    ),
    (
        "gaugehistogram_negative_gsum_with_negative_threshold",
        '# TYPE g gaugehistogram\ng_bucket{le="-1"} 0\ng_bucket{le="+Inf"} 1\n'
        "g_gcount 1\ng_gsum -2\n# EOF\n",
    ),
    (
        "summary_quantiles_count_and_sum",
        '# TYPE s summary\ns{quantile="0.5"} NaN\ns_count 3\ns_sum 1\n# EOF\n',
    ),
    ("info_value_one", '# TYPE i info\ni_info{v="1"} 1.0\n# EOF\n'),
    ("stateset_one_sample_per_state", '# TYPE s stateset\ns{s="a"} 1\ns{s="b"} 0\n# EOF\n'),
    (
        "unit_is_the_name_suffix",
        "# TYPE a_seconds gauge\n# UNIT a_seconds seconds\na_seconds 1\n# EOF\n",
    ),
    ("empty_unit_and_help", "# TYPE a gauge\n# UNIT a \n# HELP a \na 1\n# EOF\n"),
    ("metadata_in_any_order", "# HELP a_b h\n# UNIT a_b b\n# TYPE a_b gauge\n# EOF\n"),
    (
        "a_metric_with_two_points_in_order",
        "# TYPE a counter\na_total 1 1\na_created 0 1\na_total 2 2\na_created 0 2\n# EOF\n",
    ),
]
FAIL = [
    ("missing_eof", "a 1\n", 1, "missing '# EOF'"),
    ("nothing_after_eof", "# EOF\na 1\n", 2, "after '# EOF'"),
    ("no_blank_lines", "a 1\n\n# EOF\n", 2, "blank line"),
    ("no_comments", "# hello\n# EOF\n", 1, "comment lines"),
    ("eof_is_exact", "# EOF \n", 1, "EOF line"),
    ("one_space_between_tokens", "a  1\n# EOF\n", 1, "expected"),
    ("no_tabs", "a\t1\n# EOF\n", 1, ""),
    ("no_trailing_space", "a 1 \n# EOF\n", 1, "expected"),
    ("no_trailing_comma_in_labels", 'a{b="c",} 1\n# EOF\n', 1, "trailing comma"),
    ("no_blanks_in_labels", 'a{ b="c"} 1\n# EOF\n', 1, "whitespace"),
    ("no_blank_before_labels", 'a {b="c"} 1\n# EOF\n', 1, "blank between"),
    ("a_space_after_the_labels", 'a{b="c"}\t1\n# EOF\n', 1, "single space"),
    ("label_names_have_no_colon", 'a{b:c="d"} 1\n# EOF\n', 1, "expected"),
    ("label_names_with_two_underscores_are_reserved", 'a{__b="c"} 1\n# EOF\n', 1, "reserved"),
    ("label_names_are_unique", 'a{b="1",b="2"} 1\n# EOF\n', 1, "duplicate"),
    ("quoted_names_are_not_1_0", '{"a"} 1\n# EOF\n', 1, "quoted"),
    ("nan_has_no_sign", "a +nan\n# EOF\n", 1, "invalid value"),
    ("numbers_fit_a_float64", "a 1e400\n# EOF\n", 1, "out of range"),
    ("no_digit_separators", "a 1_0\n# EOF\n", 1, "invalid value"),
    ("timestamps_are_not_nan", "a 1 NaN\n# EOF\n", 1, "invalid timestamp"),
    ("help_ends_without_a_lone_backslash", "# HELP a x\\\n# EOF\n", 1, "lone backslash"),
    ("untyped_is_not_a_type", "# TYPE a untyped\n# EOF\n", 1, "unknown metric type"),
    ("one_help_per_family", "# HELP a x\n# HELP a y\n# EOF\n", 2, "second HELP"),
    ("metadata_before_samples", "# TYPE a gauge\na 1\n# HELP a x\n# EOF\n", 3, "after its samples"),
    (
        "unit_is_the_name_suffix_or_nothing",
        "# TYPE a gauge\n# UNIT a seconds\n# EOF\n",
        2,
        "does not end with its unit",
    ),
    ("info_has_no_unit", "# TYPE a_u info\n# UNIT a_u u\n# EOF\n", 2, "cannot have a unit"),
    ("stateset_has_no_unit", "# TYPE a_u stateset\n# UNIT a_u u\n# EOF\n", 2, "cannot have a unit"),
    ("counter_samples_have_suffixes", "# TYPE a counter\na 1\n# EOF\n", 2, "not part of counter"),
    ("family_names_do_not_clash", "# TYPE a counter\n# TYPE a_total gauge\n# EOF\n", 2, "clashes"),
    (
        "families_are_not_interleaved",
        "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n# EOF\n",
        5,
        "belongs to family",
    ),
    (
        "metrics_are_not_interleaved",
        'a{x="1"} 1\na{x="2"} 1\na{x="1"} 2\n# EOF\n',
        3,
        "not contiguous",
    ),
    (
        "metric_points_are_not_interleaved",
        "# TYPE s summary\ns_count 0 1\ns_count 0 2\ns_sum 0 1\n# EOF\n",
        4,
        "go backwards",
    ),
    ("timestamps_all_or_none", "a 1 1\na 2\n# EOF\n", 2, "mixes"),
    ("counter_total_is_not_nan", "# TYPE a counter\na_total NaN\n# EOF\n", 2, "NaN"),
    ("counter_total_is_not_negative", "# TYPE a counter\na_total -1\n# EOF\n", 2, "negative"),
    ("histogram_has_a_plus_inf_bucket", H + 'h_bucket{le="1"} 0\n# EOF\n', 2, "+Inf bucket"),
    ("histogram_plus_inf_is_spelled_plus_inf", H + 'h_bucket{le="+inf"} 0\n# EOF\n', 2, "+Inf"),
    ("histogram_bucket_has_an_le", H + "h_bucket 0\n# EOF\n", 2, "without an le"),
    ("histogram_threshold_is_not_nan", H + 'h_bucket{le="nan"} 0\n# EOF\n', 2, "not a number"),
    (
        "histogram_thresholds_increase",
        H + 'h_bucket{le="2"} 0\nh_bucket{le="1"} 0\n# EOF\n',
        3,
        "increasing",
    ),
    (
        "histogram_thresholds_are_unique",
        H + 'h_bucket{le="1"} 0\nh_bucket{le="1.0"} 0\n# EOF\n',
        3,
        "increasing",
    ),
    (
        "histogram_buckets_are_cumulative",
        H + 'h_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\n# EOF\n',
        3,
        "decrease",
    ),
    (
        "histogram_bucket_values_are_integers",
        H + 'h_bucket{le="+Inf"} 1.5\n# EOF\n',
        2,
        "not an integer",
    ),
    (
        "histogram_bucket_values_are_not_negative",
        H + 'h_bucket{le="+Inf"} -1\n# EOF\n',
        2,
        "negative",
    ),
    (
        "histogram_count_equals_the_plus_inf_bucket",
        H + 'h_bucket{le="+Inf"} 2\nh_count 3\nh_sum 1\n# EOF\n',
        4,
        "differs",
    ),
    (
        "histogram_count_is_an_integer",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2.5\nh_sum 1\n# EOF\n',
        3,
        "not an integer",
    ),
    (
        "histogram_sum_needs_the_count",
        H + 'h_bucket{le="+Inf"} 2\nh_sum 1\n# EOF\n',
        3,
        "needs its count",
    ),
    (
        "histogram_count_needs_the_sum",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2\n# EOF\n',
        3,
        "needs its sum",
    ),
    (
        "histogram_sum_is_not_negative",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2\nh_sum -1\n# EOF\n',
        4,
        "negative",
    ),
    (
        "histogram_sum_is_not_nan",
        H + 'h_bucket{le="+Inf"} 2\nh_count 2\nh_sum NaN\n# EOF\n',
        4,
        "NaN",
    ),
    (
        "histogram_with_negative_thresholds_has_no_sum",
        H + 'h_bucket{le="-1"} 0\nh_bucket{le="+Inf"} 2\nh_count 2\nh_sum 0\n# EOF\n',
        5,
        "cannot have a _sum",
    ),
    (
        "histogram_metric_labels_have_no_le",
        H + 'h_bucket{le="+Inf"} 2\nh_count{le="1"} 2\nh_sum{le="1"} 1\n# EOF\n',
        3,
        "only _bucket samples",
    ),
    (
        "gaugehistogram_negative_gsum_needs_a_negative_threshold",
        '# TYPE g gaugehistogram\ng_bucket{le="+Inf"} 1\ng_gcount 1\ng_gsum -1\n# EOF\n',
        4,
        "negative _gsum",
    ),
    (
        "gaugehistogram_gsum_is_not_nan",
        '# TYPE g gaugehistogram\ng_bucket{le="+Inf"} 1\ng_gcount 1\ng_gsum NaN\n# EOF\n',
        4,
        "NaN",
    ),
    ("summary_quantile_label_is_required", "# TYPE s summary\ns 1\n# EOF\n", 2, "quantile label"),
    (
        "summary_quantile_is_between_0_and_1",
        '# TYPE s summary\ns{quantile="1.5"} 1\n# EOF\n',
        2,
        "quantile label",
    ),
    (
        "summary_quantile_values_are_not_negative",
        '# TYPE s summary\ns{quantile="0.5"} -1\n# EOF\n',
        2,
        "negative",
    ),
    ("summary_count_is_an_integer", "# TYPE s summary\ns_count 1.5\n# EOF\n", 2, "not an integer"),
    ("summary_sum_is_not_negative", "# TYPE s summary\ns_sum -1\n# EOF\n", 2, "negative"),
    (
        "summary_metric_labels_have_no_quantile",
        '# TYPE s summary\ns_count{quantile="0.5"} 1\n# EOF\n',
        2,
        "only quantile samples",
    ),
    ("info_value_is_one", '# TYPE i info\ni_info{v="1"} 2\n# EOF\n', 2, "info value"),
    ("info_samples_have_the_info_suffix", "# TYPE i info\ni 1\n# EOF\n", 2, "not part of info"),
    (
        "stateset_sample_has_the_family_label",
        '# TYPE s stateset\ns{x="a"} 1\n# EOF\n',
        2,
        "lacks the label",
    ),
    ("stateset_value_is_0_or_1", '# TYPE s stateset\ns{s="a"} 2\n# EOF\n', 2, "stateset value"),
    (
        "exemplars_only_on_total_and_bucket",
        '# TYPE a gauge\na 1 # {t="x"} 1\n# EOF\n',
        2,
        "exemplars are only",
    ),
    (
        "exemplar_labels_at_most_128_characters",
        '# TYPE a counter\na_total 1 # {t="' + "x" * 128 + '"} 1\n# EOF\n',
        2,
        "128",
    ),
    (
        "exemplar_value_is_a_number",
        "# TYPE a counter\na_total 1 # {} x\n# EOF\n",
        2,
        "exemplar value",
    ),
]


@pytest.mark.parametrize("text", [pytest.param(t, id=rule) for rule, t in OK])
def test_openmetrics_accepts_what_the_specification_allows(text: str) -> None:
    assert ours(text) is not None


@pytest.mark.parametrize(
    ("text", "line", "fragment"), [pytest.param(t, n, m, id=rule) for rule, t, n, m in FAIL]
)
def test_openmetrics_refuses_what_the_specification_forbids(
    text: str, line: int, fragment: str
) -> None:
    with pytest.raises(ExpositionError) as raised:
        parse(text, openmetrics=True)
    assert raised.value.line == line, raised.value
    assert fragment in raised.value.message


# Where the oracle departs from the 1.0 specification, we follow the specification.
DEPARTURES = [
    # The ABNF has no blanks in label sets, no `:` in label names, one SP before and after.
    ("blank_in_label_set", 'a{ b="c"} 1\n# EOF\n', False),
    ("colon_in_label_name", 'a{b:c="d"} 1\n# EOF\n', False),
    ("space_before_label_set", 'a {b="c"} 1\n# EOF\n', False),
    ("no_space_after_label_set", 'a{b="c"}\t1\n# EOF\n', False),
    ("runs_of_spaces_in_metadata", "# TYPE a  gauge\n# EOF\n", False),
    # number = [SIGN] ("inf" / "infinity") / "nan": no signed NaN; floats fit a float64.
    ("signed_nan", "a -nan\n# EOF\n", False),
    ("value_out_of_range", "a 1e400\n# EOF\n", False),
    # Bucket thresholds MUST NOT equal NaN (it refuses only the spelling "NaN").
    (
        "threshold_nan_in_lower_case",
        H + 'h_bucket{le="nan"} 0\nh_bucket{le="+Inf"} 0\n# EOF\n',
        False,
    ),
    # escaped-char = BS ("n" / DQUOTE / BS) / BS normal-char: a backslash needs a character.
    ("help_ending_in_a_lone_backslash", "# HELP a x\\\n# EOF\n", False),
    # A Summary's Metric's LabelSet MUST NOT have a "quantile" label.
    ("quantile_on_a_summary_count", '# TYPE s summary\ns_count{quantile="0.5"} 1\n# EOF\n', False),
    # Valid expositions it refuses: its exemplar scanner trips over an escaped quote,
    # and comparing an integer timestamp with an exponent one raises TypeError.
    (
        "escaped_quote_in_exemplar_label",
        '# TYPE a counter\na_total 1 # {t="x\\"y"} 1\n# EOF\n',
        True,
    ),
    ("integer_and_exponent_timestamps_in_one_metric", "a 1 1\na 1 1e1\n# EOF\n", True),
    # It drops a later point's samples whose series an earlier point had, so the second
    # point of this histogram loses its +Inf bucket.
    (
        "a_histogram_with_two_points",
        H + 'h_bucket{le="1"} 0 1\nh_bucket{le="+Inf"} 0 1\n'
        'h_bucket{le="1"} 0 2\nh_bucket{le="+Inf"} 1 2\n# EOF\n',
        True,
    ),
]


@pytest.mark.parametrize(
    ("text", "valid"), [pytest.param(t, v, id=rule) for rule, t, v in DEPARTURES]
)
def test_openmetrics_follows_the_specification_where_the_oracle_departs_from_it(
    text: str, valid: bool
) -> None:
    assert (ours(text) is not None) is valid
    assert (oracle_view(text) is not None) is not valid  # the departure is real


def test_openmetrics_keeps_every_point_of_a_metric_where_the_oracle_drops_some() -> None:
    text = "# TYPE a counter\na_total 1 1\na_created 0 1\na_total 2 2\na_created 0 2\n# EOF\n"
    (family,) = parse(text, openmetrics=True)
    assert [(s.name, s.timestamp) for s in family.samples] == [
        ("a_total", 1.0),
        ("a_created", 1.0),
        ("a_total", 2.0),
        ("a_created", 2.0),
    ]
    (theirs,) = oracle(text)
    assert len(theirs.samples) == 3  # the second a_created is gone


def test_openmetrics_drops_a_sample_that_repeats_its_series_at_the_same_timestamp() -> None:
    (family,) = parse("a 1\na 2\n# EOF\n", openmetrics=True)
    assert [s.value for s in family.samples] == [1.0]
    assert ours("a 1\na 2\n# EOF\n") == oracle_view("a 1\na 2\n# EOF\n")


def repeat(series: str, lines: list[int]) -> str:
    """The problem the parser names a repeated series by (as in the text format)."""
    *before, last = map(str, lines)
    return (
        f"series {series} is listed on lines {', '.join(before)} and {last}: stored once, "
        f"with the value of line {lines[0]} (Prometheus too keeps the first)"
    )


def test_openmetrics_names_the_lines_of_a_series_repeated_within_one_metric_point() -> None:
    # The specification lets a series have several lines only as MetricPoints whose
    # timestamps increase; a repeat at the same timestamp (or with none) is kept once.
    text = (
        "# TYPE a gauge\n"
        'a{x="1"} 1 5\n'
        'a{x="1"} 2 5\n'
        'a{x="1"} 3 6\n'
        'a{x="1"} 4 6.0\n'
        'a{x="1"} 5 7\n'
        "# TYPE b gauge\n"
        "b 1\n"
        "b 2\n"
        "b 3\n"
        "# EOF\n"
    )
    a, b = parse(text, openmetrics=True)
    assert [(s.value, s.timestamp) for s in a.samples] == [(1.0, 5.0), (3.0, 6.0), (5.0, 7.0)]
    assert a.problems == (repeat("a{x='1'}", [2, 3]), repeat("a{x='1'}", [4, 5]))
    assert [s.value for s in b.samples] == [1.0]
    assert b.problems == (repeat("b{}", [8, 9, 10]),)


def test_openmetrics_checks_a_histogram_point_with_a_repeated_bucket_by_its_first_line() -> None:
    text = (
        H
        + 'h_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_bucket{le="+Inf"} 5\n'
        + "h_count 2\nh_sum 3\n# EOF\n"
    )
    (family,) = parse(text, openmetrics=True)
    assert [(s.name, s.value) for s in family.samples] == [
        ("h_bucket", 1.0),
        ("h_bucket", 2.0),
        ("h_count", 2.0),
        ("h_sum", 3.0),
    ]
    assert family.problems == (repeat("h_bucket{le='+Inf'}", [3, 4]),)


def test_openmetrics_points_of_a_series_at_increasing_timestamps_are_no_repeat() -> None:
    (family,) = parse("# TYPE a gauge\na 1 5\na 2 6\n# EOF\n", openmetrics=True)
    assert [s.value for s in family.samples] == [1.0, 2.0]
    assert family.problems == ()


def test_openmetrics_reads_the_same_families_as_the_oracle_on_a_full_exposition() -> None:
    text = (
        '# TYPE a_seconds counter\n# UNIT a_seconds seconds\n# HELP a_seconds A \\"c\\".\n'
        'a_seconds_total{x="1"} 3 # {t="u"} 1\na_seconds_created{x="1"} 1.7e9\n'
        + H
        + 'h_bucket{le="0.5"} 1\nh_bucket{le="+Inf"} 2\nh_count 2\nh_sum 0.75\n'
        '# TYPE s stateset\ns{s="on"} 1\ns{s="off"} 0\n# TYPE i info\ni_info{v="2"} 1\n'
        "u 5 1.5\n# EOF\n"
    )
    assert ours(text) == oracle_view(text)
