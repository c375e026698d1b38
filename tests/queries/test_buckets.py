"""Per-bucket rates summed across replicas whose bucket edges differ."""

from __future__ import annotations

import pytest

from queries import Rate, Scope, Window, run_query
from tests.queries.storefill import at, endpoint_with_scrapes, fleet_named, histogram

pytestmark = pytest.mark.django_db

PROMPT = "vllm:request_prompt_tokens"
TYPES = {PROMPT: "histogram"}
LABELS = {"model_name": "llama", "engine": "0"}


def scrapes(cumulative_per_second: dict[str, float]) -> list:
    """Scrapes every 10 s for a minute of a histogram growing at the given rates per edge."""
    return [
        (t, histogram(PROMPT, LABELS, {le: rate * t for le, rate in cumulative_per_second.items()}))
        for t in range(0, 61, 10)
    ]


def test_edges_only_some_replicas_have_are_left_out_and_counted_in_the_next_shared_one() -> None:
    fleet = fleet_named()
    # A long-context replica buckets up to 20000 tokens, a short one stops at 10000.
    endpoint_with_scrapes(fleet, "long:1", scrapes({"1000": 1, "10000": 3, "20000": 4, "+Inf": 4}),
                          types=TYPES)  # fmt: skip
    endpoint_with_scrapes(fleet, "short:1", scrapes({"1000": 2, "10000": 2, "+Inf": 2}),
                          types=TYPES)  # fmt: skip
    result = run_query(
        Rate("prompt_len", by=("le",), window_seconds=30),
        scope=Scope(fleet),
        window=Window(at(60), at(60), 10),
        backend="local",
    )
    rates = {s.labels["le"]: s.values[0] for s in result.series}
    assert rates == {"1000": pytest.approx(3.0), "10000": pytest.approx(5.0),
                     "+Inf": pytest.approx(6.0)}  # fmt: skip
    assert "le=20000 not on every replica: counted in the next shared bucket" in result.warnings


def test_replicas_with_the_same_edges_keep_every_edge_and_add_no_warning() -> None:
    fleet = fleet_named()
    for name in ("a:1", "b:1"):
        endpoint_with_scrapes(fleet, name, scrapes({"1000": 1, "+Inf": 2}), types=TYPES)
    result = run_query(
        Rate("prompt_len", by=("le",), window_seconds=30),
        scope=Scope(fleet),
        window=Window(at(60), at(60), 10),
        backend="local",
    )
    assert sorted(s.labels["le"] for s in result.series) == ["+Inf", "1000"]
    assert not any("not on every replica" in w for w in result.warnings)
