"""The names a scrape shows on the wire."""

from __future__ import annotations

from inventory.catalog import (
    wire_names,
)
from tests.inventory.catalog.payloads import (
    CURRENT,
    families,
    via_prometheus_client,
)


def test_wire_names_put_total_back_on_counters_and_drop_created_series() -> None:
    names = wire_names(families(CURRENT.text()))
    assert "vllm:prefix_cache_hits_total" in names
    assert "vllm:iteration_tokens_total" in names
    assert not any(n.endswith("_created") for n in names)
    assert wire_names(via_prometheus_client(CURRENT.text())) == names
