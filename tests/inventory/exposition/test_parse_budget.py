"""A parse's budget (issue 18): the sample limit and the deadline stop the parse itself.

Before, a payload far over the sample limit was parsed in full (a million series took
most of 20 s) and only then counted; the deadline did not cover parsing at all.
"""

from __future__ import annotations

from typing import Any

import pytest

from inventory.exposition import (
    ExpositionError,
    LabelCache,
    ParseBudget,
    ParseDeadlineExceeded,
    SampleLimitExceeded,
    parse,
    parser,
)
from tests.inventory.clocks import JumpingClock


def series(count: int, *, start: int = 0, name: str = "x") -> str:
    return f"# TYPE {name} gauge\n" + "".join(
        f'{name}{{i="{i}",model="m"}} 1\n' for i in range(start, start + count)
    )


@pytest.fixture
def lines_parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many lines each full text parse was handed."""
    seen: list[int] = []
    real = parser._parse_text

    def counting(lines: list[str], *args: Any, **kwargs: Any) -> Any:
        seen.append(len(lines))
        return real(lines, *args, **kwargs)

    monkeypatch.setattr(parser, "_parse_text", counting)
    return seen


@pytest.mark.parametrize("fast", [True, False])
def test_the_sample_limit_stops_the_parse_at_the_first_sample_past_it(
    lines_parsed: list[int], fast: bool
) -> None:
    cache = LabelCache()
    with pytest.raises(SampleLimitExceeded) as caught:
        parse(series(20_000), cache=cache, fast=fast, budget=ParseBudget(max_samples=500))
    assert (caught.value.line, caught.value.message) == (
        502,
        "more than 500 samples (sample limit)",
    )
    assert isinstance(caught.value, ExpositionError)  # still the parser's one exception
    if fast:
        # Handed only the TYPE line, 500 samples and the empty tail of a complete payload.
        assert lines_parsed == [502]
    # The endpoint's cache learned nothing from a payload that failed.
    assert len(cache) == 0 and cache.template is None


def test_a_payload_at_the_limit_parses_as_before() -> None:
    text = series(500)
    budget = ParseBudget(max_samples=500)
    assert parse(text, budget=budget) == parse(text)


def test_comments_and_blank_lines_do_not_count_towards_the_limit() -> None:
    text = "# a comment\n\n  # TYPE x gauge\n" + series(300)[len("# TYPE x gauge\n") :] + "\n\t\n"
    (family,) = parse(text, budget=ParseBudget(max_samples=300))
    assert len(family.samples) == 300


def test_a_malformed_line_before_the_limit_is_reported_first() -> None:
    text = series(10) + "not a sample\n" + series(5_000, start=10, name="y")
    with pytest.raises(ExpositionError) as caught:
        parse(text, budget=ParseBudget(max_samples=100))
    assert not isinstance(caught.value, SampleLimitExceeded)
    assert caught.value.line == 12


def test_a_parse_past_its_deadline_stops_before_it_begins() -> None:
    clock = JumpingClock(jump_after=0)
    with pytest.raises(ParseDeadlineExceeded):
        parse(series(10), budget=ParseBudget(deadline=5.0, clock=clock))


@pytest.mark.parametrize("openmetrics", [False, True])
def test_a_parse_that_runs_past_its_deadline_stops_part_way(openmetrics: bool) -> None:
    # Timestamped lines: read one by one (the bulk path leaves them to the lexer), and
    # the clock is looked at every few thousand lines.
    text = "".join(f'x{{i="{i}"}} 1 {1000 + i}\n' for i in range(50_000))
    if openmetrics:
        text += "# EOF\n"
    clock = JumpingClock(jump_after=3)
    with pytest.raises(ParseDeadlineExceeded) as caught:
        parse(text, openmetrics=openmetrics, budget=ParseBudget(deadline=5.0, clock=clock))
    assert caught.value.line < 25_000
    assert caught.value.message == "the deadline passed while parsing"


def test_the_bulk_path_looks_at_the_clock_between_its_passes() -> None:
    clock = JumpingClock(jump_after=2)  # the parse's start and the first pass are in time
    with pytest.raises(ParseDeadlineExceeded):
        parse(series(5_000), cache=LabelCache(), budget=ParseBudget(deadline=5.0, clock=clock))
    assert clock.readings == 3


def test_no_budget_and_an_ample_budget_parse_alike() -> None:
    text = series(2_000)
    ample = ParseBudget(max_samples=1_000_000, deadline=float("inf"))
    assert parse(text, cache=LabelCache(), budget=ample) == parse(text, cache=LabelCache())
