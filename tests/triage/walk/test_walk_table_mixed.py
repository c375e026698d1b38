"""The walk reaches each scenario's manifest branch, and no other leaf, in a fleet caught
mid-upgrade: the incident's replica 0 speaks vLLM 0.10, its peer replica 2 early V1 (0.8:
no engine label, old buckets, no waiting-by-reason), replica 1 the current dialect."""

from __future__ import annotations

from tests.triage.walk.scenario_walks import table_test

test_the_walk_supports_exactly_the_manifest_branch = table_test(
    seed=3, dialect_of={0: "v1-0.10", 2: "v1-0.8"}
)
