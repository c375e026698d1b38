"""Seed 2 of the scenario table on vLLM 0.10 (`v1-0.10`: old TPOT name, both
KV-usage names, no waiting-by-reason): the walk reaches each scenario's manifest
branch and no other leaf."""

from __future__ import annotations

from tests.triage.walk.scenario_walks import table_test

test_the_walk_supports_exactly_the_manifest_branch = table_test(seed=2, dialect="v1-0.10")
