from __future__ import annotations

import math

from inventory.exposition import parse
from inventory.store.codec import (
    LayoutMemo,
    decode_layout,
    decode_values,
    encode_layout,
    encode_values,
    frame_from_families,
    layout_digest,
)

PAYLOAD = """# HELP vllm:num_preemptions_total Preemptions.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 5.0
# HELP vllm:num_preemptions_created Created.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="m"} 1.7e9
# HELP vllm:kv_cache_usage_perc KV usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} NaN
vllm:kv_cache_usage_perc{engine="1",model_name="m"} +Inf
"""


def test_frame_keeps_values_in_layout_order_and_skips_created() -> None:
    frame = frame_from_families(parse(PAYLOAD))
    names = [name for name, _ in frame.layout]
    assert names == [
        "vllm:num_preemptions_total",
        "vllm:kv_cache_usage_perc",
        "vllm:kv_cache_usage_perc",
    ]
    assert frame.values[0] == 5.0
    assert math.isnan(frame.values[1])
    assert frame.values[2] == math.inf


def test_values_and_layout_round_trip_through_their_encodings() -> None:
    frame = frame_from_families(parse(PAYLOAD))
    values = decode_values(encode_values(frame.values))
    assert values[0] == 5.0 and math.isnan(values[1]) and values[2] == math.inf
    assert decode_layout(encode_layout(frame.layout)) == [(n, dict(lb)) for n, lb in frame.layout]


def test_layout_digest_ignores_label_order_but_not_values() -> None:
    a = (("x", {"a": "1", "b": "2"}),)
    b = (("x", {"b": "2", "a": "1"}),)
    c = (("x", {"a": "1", "b": "3"}),)
    assert layout_digest(a) == layout_digest(b) != layout_digest(c)


def test_layout_memo_reports_changes_per_endpoint() -> None:
    memo = LayoutMemo()
    first = (("x", {"a": "1"}),)
    second = (("x", {"a": "2"}),)
    digest, changed = memo.digest(1, first)
    assert changed
    assert memo.digest(1, first) == (digest, False)
    assert memo.digest(1, second)[1] is True
    assert memo.digest(2, first) == (digest, True)


def test_layout_memo_treats_a_flip_back_to_a_recent_layout_as_known() -> None:
    memo = LayoutMemo(keep=2)
    a = (("x", {"adapters": "a"}),)
    b = (("x", {"adapters": "b"}),)
    c = (("x", {"adapters": "c"}),)
    digest_a, _ = memo.digest(1, a)
    assert memo.digest(1, b)[1] is True
    assert memo.digest(1, a) == (digest_a, False)
    assert memo.digest(1, c)[1] is True
    # Only the last two are kept: b has been pushed out by now.
    assert memo.digest(1, b)[1] is True
