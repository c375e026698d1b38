"""On every input whatsoever, the parser raises only ExpositionError: seeded malformed
lines, mutated recorded payloads, arbitrary text and bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.exposition.parser import ExpositionError, parse
from tests.inventory.exposition.fuzzing import FUZZ, mutated_payloads

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


@FUZZ
@given(mutated_payloads(), st.booleans())
def test_mutated_payloads_raise_only_exposition_error(payload: bytes, openmetrics: bool) -> None:
    _check_only_exposition_error(payload, openmetrics)


@FUZZ
@given(st.text(max_size=200), st.booleans())
def test_arbitrary_text_raises_only_exposition_error(text: str, openmetrics: bool) -> None:
    _check_only_exposition_error(text, openmetrics)


@FUZZ
@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_raise_only_exposition_error(data: bytes, openmetrics: bool) -> None:
    _check_only_exposition_error(data, openmetrics)
