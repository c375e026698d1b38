"""What one parse may spend: a sample limit and a deadline, both enforced while parsing.

    parse(body, cache=cache, budget=ParseBudget(max_samples=200_000, deadline=t))

A payload with more samples than the limit is read only up to the first sample past
it: any malformed line before that one is reported as usual, otherwise
`SampleLimitExceeded` names that sample's line. The deadline (a reading of `clock`)
is looked at before the parse, between the bulk path's passes and every few thousand
lines of the line-by-line readers; once past it, `ParseDeadlineExceeded`. Both are
ExpositionErrors (the parser's only exception), raised as soon as they are known.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from inventory.exposition.model import ExpositionError

# The line-by-line readers look at the clock once per this many lines.
CHECK_EVERY_LINES = 4096


class ParseStopped(ExpositionError):
    """The parse was stopped by its budget, not by a malformed line."""


class SampleLimitExceeded(ParseStopped):
    def __init__(self, line: int, limit: int) -> None:
        super().__init__(line, f"more than {limit} samples (sample limit)")
        self.limit = limit

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.line, self.limit))


class ParseDeadlineExceeded(ParseStopped):
    def __init__(self, line: int, message: str = "the deadline passed while parsing") -> None:
        super().__init__(line, message)


@dataclass
class ParseBudget:
    """A parse's sample limit (None: none) and deadline in `clock` readings (None: none)."""

    max_samples: int | None = None
    deadline: float | None = None
    clock: Callable[[], float] = field(default=time.monotonic)

    def check_time(self, line: int) -> None:
        """Raise ParseDeadlineExceeded at `line` if the deadline has passed."""
        if self.deadline is not None and self.clock() > self.deadline:
            raise ParseDeadlineExceeded(line)

    def text_limit_line(self, lines: list[str]) -> int | None:
        """The index of the text-format line holding the first sample past the limit;
        None if there is none. Every line that is not blank or a comment is a sample
        (or malformed, which the parse of the lines before it cannot meet)."""
        limit = self.max_samples
        if limit is None or len(lines) <= limit:
            return None  # a line holds at most one sample
        seen = 0
        for k, line in enumerate(lines):
            first = line[:1]
            if first == " " or first == "\t":
                first = line.lstrip(" \t")[:1]
            if first and first != "#":
                seen += 1
                if seen > limit:
                    return k
            if not k % 65536:
                self.check_time(k + 1)
        return None
