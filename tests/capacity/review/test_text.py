from __future__ import annotations

from capacity.review import capacity_review, render_text
from tests.capacity.review.helpers import llama_70b_inputs


def test_the_text_has_a_section_per_ledger_with_formula_and_origin() -> None:
    text = render_text(capacity_review(llama_70b_inputs()), ["tp = 4 (test)"])
    for section in (
        "INPUTS",
        "WEIGHTS (lower bound)",
        "KV",
        "CACHE CONFIG",
        "REPLICAS",
        "SENSITIVITY",
        "WHAT WOULD FLIP THE DESIGN",
        "SANITY CHECKS",
        "CLASSIC MISTAKES",
        "THRESHOLDS",
    ):
        assert section in text
    assert "KV bytes per token (replica): 327,680 bytes (320 KiB)" in text
    assert "= 2 x L x H_kv x D_head x b_kv   [derived" in text
    assert "REPLICAS REQUIRED: 13" in text
    assert "needs measurement" in text
