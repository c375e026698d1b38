"""A clock for deadline tests: time that jumps instead of passing, so a test can put a
parse past its deadline without a wall-clock assertion."""

from __future__ import annotations


class JumpingClock:
    """Reads 0 for the first `jump_after` readings, then far past any deadline."""

    def __init__(self, jump_after: int) -> None:
        self.readings = 0
        self.jump_after = jump_after

    def __call__(self) -> float:
        self.readings += 1
        return 0.0 if self.readings <= self.jump_after else 1_000.0
