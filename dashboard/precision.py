"""How precise a quantile from histogram buckets may be shown: the one stated rule.

A quantile read from buckets (`histogram_quantile`) is only known to lie in its bucket
(lower, upper]; the number inside it is a linear interpolation, not a measurement. A p99
of "635.20 s" inside a 160-640 s bucket claims precision the data does not have.

The rule: a quantile whose bucket is wider than `WIDE_BUCKET_FRACTION` of its value is
shown as its bucket ("160–640 s"), the interpolated value only beside it; a narrower
bucket shows the value. A quantile past the last finite edge (the `+Inf` bucket) has no
value at all and is shown as "> edge", never as a number.

Latency axes: a quantile panel whose values span more than `LOG_SCALE_DECADES` decades
opens on a log scale (a 100 ms p50 and a 600 s p99 on one linear axis flatten the p50).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

# A bucket wider than this fraction of the interpolated value: shown as the bucket.
WIDE_BUCKET_FRACTION = 0.25
# Finite positive values spanning more than this many decades: a log axis by default.
LOG_SCALE_DECADES = 2.0


def bucket_is_wide(value: float | None, lower: float | None, upper: float | None) -> bool:
    """Whether a quantile interpolated as `value` in the bucket (`lower`, `upper`] must be
    shown as its bucket. Past the last edge (`upper` None) it is always a bound, never a
    value: wide. With no bucket at all (not a bucket quantile) there is nothing to say."""
    if lower is None:
        return False
    if upper is None or value is None:
        return True
    return upper - lower > WIDE_BUCKET_FRACTION * abs(value)


def spans_decades(values: Iterable[float | None], decades: float = LOG_SCALE_DECADES) -> bool:
    """Whether the finite positive `values` span more than `decades` decades (max/min
    above 10**decades). Zeros, negatives and gaps have no place on a log axis: ignored."""
    present = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if len(present) < 2:
        return False
    return max(present) / min(present) > 10**decades
