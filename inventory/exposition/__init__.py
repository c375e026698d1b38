"""The exposition parser: Prometheus text format 0.0.4 and OpenMetrics 1.0, strict.

`parse(payload)` returns families or raises `ExpositionError(line, message)`, the only
exception that escapes. Inside: `lexer` (one line into tokens), `assembler` (samples
into families, with the checks of `checks`), `templates` (the fast path that re-reads a
payload laid out like the last one from the same endpoint), `bulk` (every line of a
text payload at once), `openmetrics`.
`forget_shared()` empties the process-wide tables of validated text (benchmarks);
`ParseBudget` (see `budget`) stops a parse at its sample limit or deadline."""

from __future__ import annotations

from inventory.exposition.parser import (
    ExpositionError,
    Family,
    LabelCache,
    Labels,
    ParseBudget,
    ParseDeadlineExceeded,
    ParseStopped,
    Sample,
    SampleLimitExceeded,
    forget_shared,
    parse,
)

__all__ = [
    "ExpositionError",
    "Family",
    "LabelCache",
    "Labels",
    "ParseBudget",
    "ParseDeadlineExceeded",
    "ParseStopped",
    "Sample",
    "SampleLimitExceeded",
    "forget_shared",
    "parse",
]
