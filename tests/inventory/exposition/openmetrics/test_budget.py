"""A parse's sample limit stops the OpenMetrics reader itself, at the first sample past it,
before the lines after it are read."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.exposition import ParseBudget, SampleLimitExceeded, parse
from inventory.exposition.openmetrics import reader as openmetrics_reader


def test_the_sample_limit_stops_an_openmetrics_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = openmetrics_reader.Reader.sample

    def counting(self: Any, line: str, lineno: int) -> None:
        read.append(lineno)
        real(self, line, lineno)

    monkeypatch.setattr(openmetrics_reader.Reader, "sample", counting)
    text = "# TYPE x gauge\n" + "".join(f'x{{i="{i}"}} 1\n' for i in range(5_000)) + "# EOF\n"
    with pytest.raises(SampleLimitExceeded) as caught:
        parse(text, openmetrics=True, budget=ParseBudget(max_samples=100))
    assert caught.value.line == 102
    assert len(read) == 100
