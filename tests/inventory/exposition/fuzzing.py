"""What the parser's fuzz tests feed it: valid text expositions of every family type, and
recorded payloads with a few bytes flipped, cut, inserted, deleted or repeated."""

from __future__ import annotations

import math
import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent.parent / "data"


def fuzz_settings(examples: int) -> settings:
    """CI runs a fixed, quick set of `examples`. For a deeper hunt, run the fuzz tests with
    FUZZ_EXAMPLES=5000 FUZZ_RANDOM=1 in the environment."""
    return settings(
        max_examples=int(os.environ.get("FUZZ_EXAMPLES", str(examples))),
        derandomize=not os.environ.get("FUZZ_RANDOM"),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


FUZZ = fuzz_settings(150)

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
