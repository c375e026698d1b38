"""The text format, judged by Prometheus' own parser: `promtool check metrics`.

Hypothesis writes valid and near-valid expositions (blanks and tabs between tokens,
every value and timestamp spelling, escapes, comments, empty lines) and breaks a
few lines of them; on each, our verdict must be promtool's, and when both refuse,
at the same line. promtool also lints (naming conventions): that is exit status 3
with the problems on stderr, while a payload it cannot parse is exit status 1 with
"text format parsing error in line N". Only the parse verdict is compared.

A few breakages are refused by the format's specification but let through by
promtool (its parser keeps no order of families, for one); on those we must refuse,
and each has a hand-written case below showing promtool's side.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.exposition.parser import ExpositionError, parse
from tests.inventory.exposition.fuzzing import fuzz_settings

CHECKS = fuzz_settings(120)
_PARSE_ERROR = re.compile(r"text format parsing error in line (\d+): (.*)")


def promtool_path() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool is not installed: `make test` installs it with the Debian package "
            "prometheus (apt-get install prometheus)"
        )
    return path


def promtool_verdict(payload: str) -> int | None:
    """None if promtool parses the payload, else the line of its parse error."""
    result = subprocess.run(
        [promtool_path(), "check", "metrics"],
        input=payload.encode("utf-8"),
        capture_output=True,
        timeout=30,
        check=False,
    )
    stderr = result.stderr.decode("utf-8", "replace")
    if result.returncode in (0, 3):  # 3: parsed, with lint problems
        return None
    match = _PARSE_ERROR.search(stderr)
    assert result.returncode == 1 and match is not None, (result.returncode, stderr)
    return int(match.group(1))


def our_verdict(payload: str) -> int | None:
    try:
        parse(payload)
    except ExpositionError as exc:
        return exc.line
    return None


# --- generating expositions ----------------------------------------------------------------

_letters = "abcdefghijklmnopqrstuvwxyz"
base_names = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_letters + "_:"),
    st.text(alphabet=_letters + "0123456789_:", max_size=6),
)
label_names = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_letters + "ABC"),
    st.text(alphabet=_letters + "0123456789_", max_size=5),
)
label_values = st.text(
    alphabet=st.one_of(
        st.sampled_from(' ab#{}=,"\\\n\t\x00\r\u00e9\u2603'),
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"),
    ),
    max_size=8,
)
help_texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(" ab\\\n\t\x00\r#"),
        st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"),
    ),
    max_size=12,
)
# Spellings Go's ParseFloat reads (and a few it refuses, to be judged by promtool).
VALUES = [
    "0",
    "1",
    "-1",
    "42",
    "1.5",
    "-0.25",
    ".5",
    "5.",
    "+5",
    "007",
    "1e3",
    "1E-3",
    "2.5e+2",
    "1.7976931348623157e308",
    "1e-400",
    "NaN",
    "nan",
    "NAN",
    "+Inf",
    "-Inf",
    "inf",
    "+inf",
    "-INF",
    "Infinity",
    "-infinity",
]
BAD_VALUES = ["1_0", "0x10", "+nan", "-NaN", "1e400", "one", "1e", "--1", "\u0661", "0x1p3", "Inf5"]
TIMESTAMPS = [
    "0",
    "1700000000000",
    "-5",
    "+5",
    "007",
    "9223372036854775807",
    "-9223372036854775808",
]
BAD_TIMESTAMPS = ["1.5", "9223372036854775808", "1e3", "0x10", "1_0", "NaN", "+-1"]
# Separators where a blank is needed, and where one is optional.
NEEDED = [" ", " ", " ", "  ", "\t", " \t ", "\t\t"]
OPTIONAL = ["", "", "", "", " ", "\t", "  "]


@dataclass
class Exposition:
    lines: list[str] = field(default_factory=list)
    # Breakages the specification refuses and promtool accepts (see the module doc).
    spec_only: list[str] = field(default_factory=list)
    final_newline: bool = True

    def text(self) -> str:
        body = "\n".join(self.lines)
        return body + "\n" if self.final_newline and self.lines else body


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


@st.composite
def sample_lines(draw: st.DrawFn, name: str, labels: list[tuple[str, str]], stamped: bool) -> str:
    sep = lambda: draw(st.sampled_from(NEEDED))  # noqa: E731 - a draw per separator
    opt = lambda: draw(st.sampled_from(OPTIONAL))  # noqa: E731
    line = draw(st.sampled_from(["", "", "", " ", "\t"])) + name
    braces, trailing_comma = draw(st.booleans()), draw(st.booleans())
    if labels or braces:
        pairs = [
            f'{opt()}{key}{opt()}={opt()}"{_escape_label(value)}"{opt()}' for key, value in labels
        ]
        comma = "," + opt() if labels and trailing_comma else ""
        line += opt() + "{" + ",".join(pairs) + comma + "}" + opt()
        if line[-1] == "}" and draw(st.booleans()):
            line += sep()
    else:
        line += sep()
    line += draw(st.sampled_from(VALUES))
    if stamped:
        line += sep() + draw(st.sampled_from(TIMESTAMPS))
    return line


@st.composite
def label_sets(draw: st.DrawFn) -> list[tuple[str, str]]:
    names = draw(st.lists(label_names, max_size=3, unique=True))
    return [(name, draw(label_values)) for name in names if name not in ("le", "quantile")]


@st.composite
def families(draw: st.DrawFn, index: int) -> tuple[list[str], str, str]:
    """The lines of one family, its name and its type."""
    base = f"{draw(base_names)}_f{index}"
    type_ = draw(st.sampled_from(["counter", "gauge", "histogram", "summary", "untyped", ""]))
    name = base + "_total" if type_ == "counter" and draw(st.booleans()) else base
    lines = []
    lead = lambda: draw(st.sampled_from(["", "", "", " ", "\t"]))  # noqa: E731
    sep = lambda: draw(st.sampled_from(NEEDED))  # noqa: E731
    metadata = []
    if draw(st.booleans()):
        metadata.append(f"{lead()}#{sep()}HELP{sep()}{name}{sep()}{_escape_help(draw(help_texts))}")
    if type_:
        metadata.append(f"{lead()}#{sep()}TYPE{sep()}{name}{sep()}{type_}")
    lines.extend(draw(st.permutations(metadata)))
    stamped = draw(st.booleans()) and draw(st.booleans())
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        labels = draw(label_sets())
        if type_ == "histogram":
            bounds = sorted(
                set(draw(st.lists(st.sampled_from(["0.1", "1", "2.5e1", "1e3"]), max_size=3))),
                key=float,
            )
            for bound in [*bounds, draw(st.sampled_from(["+Inf", "+inf", "Inf"]))]:
                labelled = [*labels, ("le", bound)]
                lines.append(draw(sample_lines(base + "_bucket", labelled, stamped)))
            lines.append(draw(sample_lines(base + "_count", labels, stamped)))
            lines.append(draw(sample_lines(base + "_sum", labels, stamped)))
        elif type_ == "summary":
            for quantile in ("0.5", "0.99"):
                lines.append(draw(sample_lines(base, [*labels, ("quantile", quantile)], stamped)))
            lines.append(draw(sample_lines(base + "_count", labels, stamped)))
        else:
            lines.append(draw(sample_lines(name, labels, stamped)))
    return lines, name, type_


def _break_line(draw: st.DrawFn, line: str) -> str:
    """A near-valid line: one token misspelled or one separator wrong."""
    how = draw(
        st.sampled_from(
            [
                "trailing",
                "value",
                "timestamp",
                "cr",
                "tab_in_name",
                "quote",
                "brace",
                "comma",
                "equals",
                "escape",
                "lead_brace",
                "name",
            ]
        )
    )
    if how == "trailing":
        return line + draw(st.sampled_from([" ", "\t", "  "]))
    if how == "value":
        return re.sub(r"[^ \t}]+$", draw(st.sampled_from(BAD_VALUES)), line)
    if how == "timestamp":
        return line + draw(st.sampled_from(NEEDED)) + draw(st.sampled_from(BAD_TIMESTAMPS))
    if how == "cr":
        return line + "\r"
    if how == "tab_in_name":
        # Not in metadata: `# HELP a_\tb` is HELP for `a_`, which may cut another
        # family's lines in two (refused by the specification only).
        return line if line.lstrip(" \t")[:1] == "#" else line.replace("_", "_\t", 1)
    if how == "quote":
        return line.replace('"', "", 1)
    if how == "brace":
        return line.replace("}", "", 1)
    if how == "comma":
        return line.replace(",", ",,", 1) if "," in line else line.replace("{", "{,", 1)
    if how == "equals":
        return line.replace("=", "", 1)
    if how == "escape":
        return line.replace('"', '"\\t', 1)
    if how == "lead_brace":
        return "{" + line
    return "1" + line.lstrip(" \t")


@st.composite
def expositions(draw: st.DrawFn) -> Exposition:
    exposition = Exposition()
    spans: list[tuple[int, int, str, str]] = []  # per family: first line, end, name, type
    for index in range(draw(st.integers(min_value=0, max_value=5))):
        lines, name, type_ = draw(families(index))
        start = len(exposition.lines)
        exposition.lines.extend(lines)
        spans.append((start, len(exposition.lines), name, type_))
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            exposition.lines.append(
                draw(
                    st.sampled_from(
                        [
                            "",
                            "   ",
                            "\t",
                            "# a comment",
                            "#",
                            "# HELPER x y",
                            "# x HELP y",
                            "#\tfree",
                        ]
                    )
                )
            )
    lines = exposition.lines
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        if not lines:
            break
        at = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        lines[at] = _break_line(draw, lines[at])
    if lines and draw(st.integers(min_value=0, max_value=9)) == 0:
        exposition.final_newline = False
    if spans and draw(st.integers(min_value=0, max_value=3)) == 0:
        _spec_only_breakage(draw, exposition, spans)
    return exposition


def _spec_only_breakage(
    draw: st.DrawFn, exposition: Exposition, spans: list[tuple[int, int, str, str]]
) -> None:
    lines = exposition.lines
    start, end, name, type_ = draw(st.sampled_from(spans))
    samples = [i for i in range(start, end) if not lines[i].lstrip(" \t").startswith("#")]
    how = draw(
        st.sampled_from(
            [
                "help_after_samples",
                "no_name",
                "no_type",
                "type_case",
                "reserved",
                "interleave",
                "bare_histogram",
            ]
        )
    )
    if (
        how == "help_after_samples"
        and samples
        and not any("HELP" in lines[i] for i in range(start, end))
    ):
        lines.insert(end, f"# HELP {name} late")
    elif how == "no_name":
        lines.insert(
            draw(st.integers(0, len(lines))),
            draw(st.sampled_from(["# HELP", "#HELP", "# TYPE ", "#\tHELP\t"])),
        )
    elif how == "no_type":
        lines.insert(end, "# TYPE fresh_name_for_type")
    elif how == "type_case":
        lines.insert(end, "# TYPE fresh_name_for_case Gauge")
    elif how == "reserved" and samples:
        at = draw(st.sampled_from(samples))
        lines[at] = (
            re.sub(r"^([ \t]*[a-zA-Z0-9_:]+)", r'\1{__reserved="x"}', lines[at])
            if "{" not in lines[at]
            else lines[at].replace("{", '{__reserved="x",', 1)
        )
    elif how == "interleave" and samples:
        later = [
            s
            for s in spans
            if s[0] >= end
            and any(not lines[i].lstrip(" \t").startswith("#") for i in range(s[0], s[1]))
        ]
        if not later:
            return
        other_start, other_end, _, _ = draw(st.sampled_from(later))
        moved = lines[samples[-1]]
        target = max(
            i for i in range(other_start, other_end) if not lines[i].lstrip(" \t").startswith("#")
        )
        lines.insert(target + 1, moved)
        del lines[samples[-1]]
    elif how == "bare_histogram" and type_ == "histogram":
        lines.insert(end, f"{name} 1")
    else:
        return
    exposition.spec_only.append(how)


@CHECKS
@given(expositions())
def test_parse_gives_promtools_verdict_at_promtools_line(exposition: Exposition) -> None:
    payload = exposition.text()
    ours = our_verdict(payload)
    if exposition.spec_only:
        assert ours is not None, f"accepted what the specification refuses: {exposition.spec_only}"
        return
    assert ours == promtool_verdict(payload), payload


# --- hand-written cases ---------------------------------------------------------------------

ACCEPTED_BY_BOTH = [
    pytest.param('x  {a="b"}   1\n', id="any_run_of_blanks_between_tokens"),
    pytest.param('x\t{\ta\t=\t"b"\t,\t}\t1\t123\n', id="tabs_between_every_token"),
    pytest.param("  x 1\n", id="blanks_before_a_sample"),
    pytest.param("\t# HELP x doc\nx 1\n", id="blanks_before_a_comment"),
    pytest.param('x{a="b"}1\n', id="no_blank_where_tokens_cannot_merge"),
    pytest.param("x-1 2\n", id="a_value_that_cannot_merge_with_the_name"),
    pytest.param(
        "#HELP x doc\n#\tTYPE\tx\tgauge\nx 1\n", id="help_and_type_after_a_hash_without_blank"
    ),
    pytest.param("# x HELP y\n# HELPER\n#\n", id="comments_mentioning_help"),
    pytest.param("x inf\ny -Infinity\nz nan\nw 1e-400\n", id="go_parsefloat_spellings"),
    pytest.param("x 1 007\ny 1 -9223372036854775808\n", id="go_parseint_timestamps"),
    pytest.param('x{a="\x00\r\\"\\\\\\n"} 1\n', id="nul_and_cr_in_a_label_value"),
    pytest.param("# HELP x a \x00 b\r\nx 1\n", id="nul_and_cr_in_help_text"),
    pytest.param("\n\n  \nx 1\n\t\n", id="empty_and_blank_lines"),
    pytest.param("x 1\n  ", id="blanks_after_the_last_line_feed"),
    pytest.param("", id="an_empty_payload"),
    pytest.param(
        "# TYPE up_total counter\nup_total 1\n# TYPE up gauge\nup 1\n",
        id="counter_x_total_and_gauge_x",
    ),
    pytest.param("# HELP \t x\n", id="help_with_a_name_and_no_text"),
]

REFUSED_BY_BOTH = [
    pytest.param(
        "x 1", 1, "does not end with a line feed", id="the_last_line_ends_with_a_line_feed"
    ),
    pytest.param("x 1 \n", 1, "trailing whitespace", id="blanks_after_the_value"),
    pytest.param(
        "x 1 2\t\n", 1, "unexpected text after the timestamp", id="blanks_after_the_timestamp"
    ),
    pytest.param("# TYPE x gauge \n", 1, "unknown metric type", id="blanks_after_the_type"),
    pytest.param("x +nan\n", 1, "invalid value", id="a_signed_nan"),
    pytest.param("x 1e400\n", 1, "out of range", id="a_value_out_of_float64_range"),
    pytest.param("x 1_000\n", 1, "invalid value", id="digit_separators"),
    pytest.param("x 1 1.5\n", 1, "invalid timestamp", id="a_fractional_timestamp"),
    pytest.param("x 1 9223372036854775808\n", 1, "out of range", id="a_timestamp_past_int64"),
    pytest.param('x{a="\\t"} 1\n', 1, "invalid escape", id="an_unknown_escape_in_a_label_value"),
    pytest.param('# HELP x a\\"b\n', 1, "invalid escape", id="an_escaped_quote_in_help_text"),
    pytest.param("x 1\r\n", 1, "carriage return", id="crlf_line_ends"),
    pytest.param(
        '# TYPE h histogram\nh_bucket{le="x"} 1\n',
        2,
        "is not a number",
        id="a_histogram_le_that_is_not_a_number",
    ),
    pytest.param(
        '# TYPE s summary\ns{quantile="q"} 1\n',
        2,
        "is not a number",
        id="a_summary_quantile_that_is_not_a_number",
    ),
    pytest.param("x{tenant=} 5\n", 1, "empty unquoted value", id="an_unquoted_empty_label_value"),
    pytest.param("x{,} 5\n", 1, "empty label", id="a_label_set_with_only_a_comma"),
    pytest.param('x{__name__="y"} 5\n', 1, "reserved", id="the_name_label"),
    pytest.param("# HELP x a\n# HELP x b\n", 2, "second HELP", id="a_second_help"),
    pytest.param("x 1\n# TYPE x gauge\n", 2, "after its samples", id="a_type_after_the_samples"),
    pytest.param("# HELP 1x doc\n", 1, "invalid metric name", id="an_invalid_name_in_help"),
]

SPEC_ONLY = [
    pytest.param("# TYPE a gauge\na 1\nb 1\na 2\n", 4, id="a_family_is_one_uninterrupted_group"),
    pytest.param("a 1\n# HELP a late\n", 2, id="help_comes_before_the_samples"),
    pytest.param("# HELP\n", 1, id="help_needs_a_metric_name"),
    pytest.param("# TYPE x\n", 1, id="type_needs_a_type"),
    pytest.param("# TYPE x Gauge\nx 1\n", 1, id="types_are_lower_case"),
    pytest.param(
        'x{__reserved="y"} 1\n', 1, id="label_names_starting_with_two_underscores_are_reserved"
    ),
    pytest.param("# TYPE h histogram\nh 1\n", 2, id="a_histogram_has_no_sample_of_its_bare_name"),
    pytest.param('# TYPE h histogram\nh_bucket{le="1",le="2"} 1\n', 2, id="label_names_are_unique"),
    pytest.param(
        "# HELP a x\n# HELP b y\n# TYPE a gauge\n",
        3,
        id="metadata_of_one_family_is_not_interrupted",
    ),
]


@pytest.mark.parametrize("payload", ACCEPTED_BY_BOTH)
def test_text_format_accepts_what_the_format_and_promtool_accept(payload: str) -> None:
    assert our_verdict(payload) is None
    assert promtool_verdict(payload) is None


@pytest.mark.parametrize(("payload", "line", "fragment"), REFUSED_BY_BOTH)
def test_text_format_refuses_what_promtool_refuses_at_its_line(
    payload: str, line: int, fragment: str
) -> None:
    with pytest.raises(ExpositionError) as raised:
        parse(payload)
    assert (raised.value.line, fragment in raised.value.message) == (line, True), raised.value
    assert promtool_verdict(payload) == line


@pytest.mark.parametrize(("payload", "line"), SPEC_ONLY)
def test_text_format_refuses_what_only_the_specification_forbids(payload: str, line: int) -> None:
    with pytest.raises(ExpositionError) as raised:
        parse(payload)
    assert raised.value.line == line
    assert promtool_verdict(payload) is None  # promtool lets it through


def test_text_format_accepts_any_run_of_blanks_between_tokens() -> None:
    (family,) = parse('x  {a="b"}   1\n')
    assert [(s.name, dict(s.labels), s.value) for s in family.samples] == [("x", {"a": "b"}, 1.0)]
