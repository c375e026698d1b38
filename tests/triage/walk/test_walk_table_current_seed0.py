"""Seed 0 of the scenario table on the current vLLM dialect: the walk reaches each
scenario's manifest branch and no other leaf. One file per seed, so parallel
workers share the table evenly."""

from __future__ import annotations

from tests.triage.walk.scenario_walks import table_test

test_the_walk_supports_exactly_the_manifest_branch = table_test(seed=0)
