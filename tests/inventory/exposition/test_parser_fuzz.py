"""Differential and robustness tests for the exposition parser.

Two properties. On every payload our parser accepts, it agrees with
prometheus_client (the reference implementation), modulo the deliberate shape
differences listed in `inventory.exposition.parser` and undone by `_reference_view`.
On every input whatsoever, only ExpositionError escapes.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as reference_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as reference_text

from fleetsim.api import sample_exposition
from fleetsim.config import DIALECTS, DIALECTS_WITH_ENGINE_LABEL
from inventory.exposition.parser import ExpositionError, Family, LabelCache, parse

DATA = Path(__file__).parent.parent / "data"
# CI runs a fixed, quick set of examples. For a deeper hunt, run this file with
# FUZZ_EXAMPLES=5000 FUZZ_RANDOM=1 in the environment.
FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "150")),
    derandomize=not os.environ.get("FUZZ_RANDOM"),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

View = list[tuple[str, str, str, list[tuple[Any, ...]]]]


# --- comparing with prometheus_client -------------------------------------------------------


def _number(value: float) -> tuple[str, float]:
    # NaN never equals itself; compare it by kind instead.
    value = float(value)
    return ("nan", 0.0) if math.isnan(value) else ("num", value)


def _timestamp(value: Any) -> float | None:
    return None if value is None else float(value)


def _our_view(families: Iterable[Family]) -> View:
    return [
        (
            family.name,
            family.type,
            family.help.strip(),
            [
                (s.name, dict(s.labels), _number(s.value), _timestamp(s.timestamp))
                for s in family.samples
            ],
        )
        for family in families
    ]


def _reference_view(families: Iterable[Any]) -> View:
    """prometheus_client's families, reshaped where our shape differs on purpose.

    It yields one family per sample of a name without metadata (we group them),
    leaves `<base>_created` gauges as families of their own (we fold them) and keeps
    every line of a series listed twice (we keep the first, as Prometheus does).
    Its renaming of counters declared without `_total` is undone separately.
    """
    out: View = []
    for family in families:
        samples = [
            (s.name, dict(s.labels), _number(s.value), _timestamp(s.timestamp))
            for s in family.samples
        ]
        previous = out[-1] if out else None
        if previous is not None:
            if family.type == "unknown" and previous[1] == "unknown" and previous[0] == family.name:
                previous[3].extend(samples)
                continue
            if (
                family.type == "gauge"
                and previous[1] in ("counter", "histogram", "summary")
                and family.name == previous[0] + "_created"
            ):
                previous[3].extend(samples)
                continue
        out.append((family.name, family.type, family.documentation.strip(), samples))
    for _, _, _, samples in out:
        first = {(s[0], frozenset(s[1].items()), s[3]): s for s in reversed(samples)}
        samples[:] = [s for s in samples if first[(s[0], frozenset(s[1].items()), s[3])] is s]
    return out


def _undo_counter_rename(view: View, ours: View) -> View:
    """A text counter declared as `x` (no _total): prometheus_client renames its samples."""
    # By name and type: a counter `x_total` and a gauge `x` are both families `x`.
    names = {(family[0], family[1]): family for family in ours}
    fixed: View = []
    for name, type_, help_, samples in view:
        mine = names.get((name, type_))
        if type_ == "counter" and mine is not None:
            declared = {s[0] for s in mine[3]}
            samples = [
                (s[0][:-6], *s[1:])
                if s[0].endswith("_total") and s[0][:-6] in declared and s[0] not in declared
                else s
                for s in samples
            ]
        fixed.append((name, type_, help_, samples))
    return fixed


def assert_agrees_with_reference(text: str) -> None:
    ours = _our_view(parse(text))
    reference = _undo_counter_rename(_reference_view(reference_text(text)), ours)
    assert ours == reference


# --- generating valid text expositions ------------------------------------------------------

_name_start = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:"
_name_rest = _name_start + "0123456789"
metric_names = st.builds(
    lambda a, b: a + b,
    st.sampled_from(_name_start),
    st.text(alphabet=_name_rest, max_size=12),
)
label_names = st.builds(
    lambda a, b: a + b,
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    st.text(alphabet=_name_rest.replace(":", ""), max_size=8),
)
label_values = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r"),
    max_size=12,
)
help_texts = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\r"),
    max_size=30,
)
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**25), max_value=10**25),
)
timestamps = st.one_of(st.none(), st.integers(min_value=-(10**15), max_value=10**15))


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _render_value(value: float | int, style: int) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return (repr(value), f"{value:e}", f"{value:.17g}", f"{value:E}")[style % 4]


@st.composite
def label_sets(draw: st.DrawFn, reserved: tuple[str, ...] = ()) -> dict[str, str]:
    names = draw(st.lists(label_names, max_size=3, unique=True))
    return {
        name: draw(label_values)
        for name in names
        if not name.startswith("__") and name not in reserved
    }


def _render_labels(labels: dict[str, str], trailing_comma: bool) -> str:
    if not labels and not trailing_comma:
        return ""
    body = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
    return "{" + body + ("," if trailing_comma and labels else "") + "}"


@st.composite
def text_expositions(draw: st.DrawFn) -> str:
    """A valid Prometheus text exposition with a mix of every family type."""
    lines: list[str] = []
    for index in range(draw(st.integers(min_value=0, max_value=6))):
        base = f"{draw(metric_names)}_f{index}"
        type_ = draw(st.sampled_from(["counter", "gauge", "histogram", "summary", "untyped"]))
        declared = base + "_total" if type_ == "counter" and draw(st.booleans()) else base
        if draw(st.booleans()):
            lines.append(f"# HELP {declared} {_escape_help(draw(help_texts))}")
        if type_ != "untyped" or draw(st.booleans()):
            lines.append(f"# TYPE {declared} {type_}")
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            labels = draw(label_sets(reserved=("le", "quantile")))
            comma = draw(st.booleans())
            stamp = draw(timestamps)
            suffix = "" if stamp is None else f" {stamp}"
            style = draw(st.integers(min_value=0, max_value=3))
            if type_ == "histogram":
                bounds = sorted(set(draw(st.lists(st.floats(-1e6, 1e6), max_size=4))))
                count = 0
                for bound in [*bounds, math.inf]:
                    count += draw(st.integers(min_value=0, max_value=5))
                    le = "+Inf" if bound == math.inf else repr(bound)
                    with_le = {**labels, "le": le}
                    lines.append(f"{base}_bucket{_render_labels(with_le, comma)} {count}{suffix}")
                lines.append(f"{base}_count{_render_labels(labels, comma)} {count}{suffix}")
                total = _render_value(draw(values), style)
                lines.append(f"{base}_sum{_render_labels(labels, comma)} {total}{suffix}")
            elif type_ == "summary":
                for q in ("0.5", "0.99"):
                    quantile = {**labels, "quantile": q}
                    value = _render_value(draw(values), style)
                    lines.append(f"{base}{_render_labels(quantile, comma)} {value}{suffix}")
                lines.append(f"{base}_count{_render_labels(labels, comma)} 1{suffix}")
            else:
                value = _render_value(draw(values), style)
                lines.append(f"{declared}{_render_labels(labels, comma)} {value}{suffix}")
        if type_ in ("counter", "histogram") and draw(st.booleans()):
            created = f"{base}_created"
            lines.append(f"# HELP {created} {_escape_help(draw(help_texts))}")
            lines.append(f"# TYPE {created} gauge")
            lines.append(f"{created} 1.7e+09")
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "# a comment", "#", "# HELPER text"])))
    # The format's last line ends with a line feed (and Prometheus refuses it otherwise).
    return "".join(line + "\n" for line in lines)


# --- agreement --------------------------------------------------------------------------------


@FUZZ
@given(text_expositions())
def test_parse_agrees_with_prometheus_client_on_generated_expositions(text: str) -> None:
    assert_agrees_with_reference(text)


# Data parallelism needs the engine label, so only those dialects get dp 8.
FLEETSIM_SHAPES = [(d, 1) for d in DIALECTS] + [(d, 8) for d in DIALECTS_WITH_ENGINE_LABEL]


@pytest.mark.parametrize(("dialect", "dp"), FLEETSIM_SHAPES)
def test_parse_agrees_with_prometheus_client_on_fleetsim_payloads(dialect: str, dp: int) -> None:
    text = sample_exposition(dialect=dialect, dp=dp, seed=3, warm_seconds=120.0)
    assert_agrees_with_reference(text)
    assert not [f.problems for f in parse(text) if f.problems]


@pytest.mark.parametrize("name", ["vllm_1engine.prom", "vllm_dp8.prom"])
def test_parse_agrees_with_prometheus_client_on_recorded_payloads(name: str) -> None:
    assert_agrees_with_reference((DATA / name).read_text())


def test_openmetrics_parse_agrees_with_prometheus_client_on_its_own_output() -> None:
    from prometheus_client import CollectorRegistry, Counter, Enum, Histogram, Info
    from prometheus_client.openmetrics.exposition import generate_latest

    registry = CollectorRegistry()
    Counter("requests", "Requests.", ["code"], registry=registry).labels("200").inc(3)
    histogram = Histogram("latency_seconds", "Latency.", buckets=[0.1, 1], registry=registry)
    histogram.observe(0.5)
    Info("build", "Build.", registry=registry).info({"version": "1"})
    Enum("state", "State.", states=["up", "down"], registry=registry).state("up")
    text = generate_latest(registry).decode()
    ours = [
        (f.name, f.type, [(s.name, dict(s.labels), s.value) for s in f.samples])
        for f in parse(text, openmetrics=True)
    ]
    reference = [
        (f.name, f.type, [(s.name, dict(s.labels), s.value) for s in f.samples])
        for f in reference_openmetrics(text)
    ]
    assert ours == reference


# --- only ExpositionError escapes -----------------------------------------------------------

MALFORMED = [
    "# HELP \t x\n",
    'a{a="1", ="2"} 1\n',
    "# TYPE a gauge\na 1 1\na 1 1e0\n",
    'a{a="\\x"} 1\n',
    'a{a="\xff"} 1\n',
    'a{a="x\x00"} 1\n',
    'a{a="unterminated} 1\n',
    "x{tenant=} 5\n",
    "a{} \n",
    "a{=} 1\n",
    "# TYPE\n",
    "# HELP a\\\n",
    "a 1 2 3 4\n",
    "{} 1\n",
    '{"quoted"} 1\n',
    'a{a="1"}} 1\n',
    "a 1e99999\n",
    "a 1 99999999999999999999999999\n",
]


def _check_only_exposition_error(payload: str | bytes, openmetrics: bool = False) -> None:
    try:
        families = parse(payload, openmetrics=openmetrics)
    except ExpositionError as exc:
        assert exc.line >= 1
        assert len(exc.message) < 200
        assert "internal parser error" not in exc.message
    else:
        assert isinstance(families, list)


@pytest.mark.parametrize("payload", MALFORMED)
@pytest.mark.parametrize("openmetrics", [False, True])
def test_seeded_malformed_cases_raise_only_exposition_error(
    payload: str, openmetrics: bool
) -> None:
    _check_only_exposition_error(payload, openmetrics)
    _check_only_exposition_error(payload.encode("utf-8", "surrogateescape"), openmetrics)


def test_openmetrics_accepts_mixed_integer_and_exponent_timestamps() -> None:
    # prometheus_client's OpenMetrics parser crashes comparing the two spellings.
    families = parse('# TYPE a gauge\na{x="1"} 1 1\na{x="1"} 1 1e0\n# EOF\n', openmetrics=True)
    assert [s.timestamp for s in families[0].samples] == [1.0, 1.0]


def test_five_hundred_valid_lines_then_a_bad_one_fails_at_line_501() -> None:
    good = "".join(f'vllm:num_requests_running{{engine="{i}"}} {i}\n' for i in range(500))
    with pytest.raises(ExpositionError) as raised:
        parse(good + 'vllm:num_requests_running{engine="x"} one\n')
    assert raised.value.line == 501


def _seed_payloads() -> list[str]:
    payloads = [(DATA / "vllm_1engine.prom").read_text()[:4000]]
    payloads += [path.read_text() for path in sorted((DATA / "conformance").glob("*/*.ok.txt"))]
    return payloads


SEEDS = _seed_payloads()


@st.composite
def mutated_payloads(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)).encode())
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        if not data:
            break
        at = draw(st.integers(min_value=0, max_value=len(data) - 1))
        action = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "duplicate"]))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        elif action == "truncate":
            del data[at:]
        elif action == "insert":
            piece = draw(
                st.sampled_from(
                    [
                        b" ",
                        b"\t",
                        b"{",
                        b"}",
                        b'"',
                        b"\\",
                        b"\n",
                        b",",
                        b"=",
                        b"#",
                        b"\x00",
                        b"\xff",
                        b"\r",
                        b"le",
                        b"_total",
                        b"e",
                        b"NaN",
                        b"# EOF\n",
                        b"# TYPE x histogram\n",
                    ]
                )
            )
            data[at:at] = piece
        elif action == "delete":
            del data[at : at + draw(st.integers(min_value=1, max_value=8))]
        else:
            end = min(len(data), at + draw(st.integers(min_value=1, max_value=60)))
            data[at:at] = data[at:end]
    return bytes(data)


@FUZZ
@given(mutated_payloads(), st.booleans())
def test_mutated_payloads_raise_only_exposition_error(payload: bytes, openmetrics: bool) -> None:
    _check_only_exposition_error(payload, openmetrics)


# Lines prometheus_client's text parser reads otherwise than the format (and promtool) do:
# it splits comments at any whitespace and takes the second word as the keyword, so
# `#HELP x y` is a plain comment to it and `#{ TYPE g gauge` a TYPE line; and it needs
# a blank between a metric name and a value the name cannot run into (`x-1`).
_COMMENT_BOTH_READ_ALIKE = re.compile(r"#|# [^ \t][^\t]*")
_VALUE_GLUED_TO_NAME = re.compile(r"[ \t]*[a-zA-Z_:][a-zA-Z0-9_:]*[^a-zA-Z0-9_:{ \t]")


def _prometheus_client_misreads(text: str) -> bool:
    for line in text.split("\n"):
        stripped = line.strip(" \t")
        if stripped[:1] == "#":
            plain = stripped.isascii() and stripped.isprintable() or stripped == "#"
            if not plain or _COMMENT_BOTH_READ_ALIKE.fullmatch(stripped) is None:
                return True
        elif _VALUE_GLUED_TO_NAME.match(line):
            return True
    return False


@FUZZ
@given(mutated_payloads())
@example(b"# TYPE a_total counter\na_total 1\n# HELP a_created x\na_total 2\n")
def test_whatever_we_accept_prometheus_client_reads_the_same_way(payload: bytes) -> None:
    try:
        text = payload.decode()
        ours = _our_view(parse(text))
    except (ExpositionError, UnicodeDecodeError):
        return
    if _prometheus_client_misreads(text):
        return
    reference = _undo_counter_rename(_reference_view(reference_text(text)), ours)
    assert ours == reference


@FUZZ
@given(st.text(max_size=200), st.booleans())
def test_arbitrary_text_raises_only_exposition_error(text: str, openmetrics: bool) -> None:
    _check_only_exposition_error(text, openmetrics)


@FUZZ
@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_raise_only_exposition_error(data: bytes, openmetrics: bool) -> None:
    _check_only_exposition_error(data, openmetrics)


def test_a_warm_cache_never_changes_what_is_accepted() -> None:
    rng = random.Random(7)
    cache = LabelCache(max_entries=64)
    for seed in SEEDS:
        if _accepts(seed):
            parse(seed, cache=cache)
    for _ in range(300):
        mutated = bytearray(rng.choice(SEEDS).encode())
        if mutated:
            mutated[rng.randrange(len(mutated))] = rng.choice(b' {}",=\\\t\n#x0')
        cold = _outcome(bytes(mutated), None)
        warm = _outcome(bytes(mutated), cache)
        assert cold == warm


def _accepts(text: str) -> bool:
    try:
        parse(text)
    except ExpositionError:
        return False
    return True


def _outcome(payload: bytes, cache: LabelCache | None) -> Any:
    try:
        return _our_view(parse(payload, cache=cache))
    except ExpositionError as exc:
        return (exc.line, exc.message)


def _outcome_of(payload: str | bytes, **options: Any) -> Any:
    try:
        families = parse(payload, **options)
    except ExpositionError as exc:
        return (exc.line, exc.message)
    return [
        (view, f.help, f.problems) for view, f in zip(_our_view(families), families, strict=True)
    ]


@FUZZ
@given(st.one_of(mutated_payloads(), text_expositions().map(str.encode)))
def test_the_fast_paths_read_every_payload_as_the_line_by_line_judge_does(payload: bytes) -> None:
    judged = _outcome_of(payload, fast=False)
    assert _outcome_of(payload) == judged
    cache = LabelCache()
    _outcome_of(payload, cache=cache)
    assert _outcome_of(payload, cache=cache) == judged  # the layout template
    cache.template = None
    assert _outcome_of(payload, cache=cache) == judged  # the label cache, in bulk
