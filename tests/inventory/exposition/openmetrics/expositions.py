"""Generated OpenMetrics expositions for the oracle comparison: valid families and metric
points, then breakages, each either judged by the oracle or, where it departs from the 1.0
specification, tagged with what the specification says (see test_departures)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

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
