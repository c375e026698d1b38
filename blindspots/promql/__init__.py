"""PromQL in, vector selectors out.

The expression is parsed by `promql_parser` (a Rust PromQL parser); this package only
prepares the text for it and walks the tree it returns. Grafana and Prometheus template
variables are not PromQL, so before parsing they are substituted:

- interval variables (`$__rate_interval`, `$__interval`, `$__range`, `${__range}`, ...) and
  any variable written where a duration goes (`[$window]`, `offset $shift`) by a duration;
- a variable in a metric name (`$metric`, `vllm:${prefix}_total`) by a placeholder that the
  walk turns back into a `__name__` matcher (`=` for one value, `=~` otherwise);
- a variable in a label-matcher value is left to the parser (it is only text inside a
  string) and then replaced by the variable's values: one value as written, several as
  an alternation (the matcher op becoming `=~` / `!~`), unknown, "All" or no values as
  `.*` (the op again a regex one). Those matchers say `from_variable=True`.

The parser gives no source positions, so a small lexer (`lexer`) finds what the parser
cannot tell us: where each vector selector is written (`Selector.text` as in the original
expression) and, for an expression the parser rejects, the line and column to blame.
"""

from __future__ import annotations

from blindspots.promql.errors import PromqlError
from blindspots.promql.parse import parse_selectors, substitute_variables
from blindspots.promql.syntax import DEFAULT_DURATION

__all__ = ["DEFAULT_DURATION", "PromqlError", "parse_selectors", "substitute_variables"]
