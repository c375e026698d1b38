"""The local backend: Prometheus semantics over windows of the embedded store.

`backend` plans what to read and evaluates specs on store chunks; `functions` holds the
PromQL functions themselves (rate and increase with Prometheus' extrapolation and reset
handling, `histogram_quantile` interpolation, instant lookback, grouping);
`histogram_checks` refuses buckets that cannot be trusted (no `+Inf`, counts falling,
`_count` unequal to `+Inf`) before a quantile or fraction is computed from them.
"""

from __future__ import annotations

from queries.local.backend import run_local, store_needs
from queries.local.functions import LOOKBACK_SECONDS

__all__ = ["LOOKBACK_SECONDS", "run_local", "store_needs"]
