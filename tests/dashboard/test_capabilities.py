"""The panels in the inventory's capability map: each panel's own specs, resolved by the
planner on what the fleet's endpoints really expose."""

from __future__ import annotations

import pytest

from dashboard.panels import PANELS
from inventory.capabilities import Verdict, capability_map
from inventory.models import Fleet
from queries import spec_keys
from tests.queries.storefill import endpoint_with_scrapes, fleet_named

pytestmark = pytest.mark.django_db

M = {"model_name": "llama", "engine": "0"}


def _fleet_exposing(*names: str) -> Fleet:
    fleet = fleet_named("-".join(n.replace(":", "-").replace("_", "-") for n in names))
    samples = [(name, M, 0.5) for name in names]
    endpoint_with_scrapes(fleet, "a:1", [(0, samples)], types={n: "gauge" for n in names})
    return fleet


def test_the_map_lists_every_panel_once_with_exactly_the_keys_its_specs_read() -> None:
    found = capability_map(fleet=_fleet_exposing("vllm:kv_cache_usage_perc"))
    statuses = [s for s in found if s.area == "panel"]
    assert [s.id for s in statuses] == [panel.id for panel in PANELS]
    for status, panel in zip(statuses, PANELS, strict=True):
        read = dict.fromkeys(k for spec in panel.traces.values() for k in spec_keys(spec))
        assert [k.key for k in status.needs] == list(read), panel.id
        assert status.title == panel.title


def test_the_map_lists_only_features_that_are_built() -> None:
    statuses = capability_map(fleet=_fleet_exposing("vllm:kv_cache_usage_perc"))
    assert {s.area for s in statuses} == {"panel", "slo"}


def test_a_panel_is_ready_on_the_current_name_and_a_fallback_on_the_old_one() -> None:
    current = {s.id: s for s in capability_map(fleet=_fleet_exposing("vllm:kv_cache_usage_perc"))}
    assert current["engine.kv"].verdict == Verdict.READY
    assert current["engine.kv"].needs[0].name == "vllm:kv_cache_usage_perc"
    old = {s.id: s for s in capability_map(fleet=_fleet_exposing("vllm:gpu_cache_usage_perc"))}
    assert old["engine.kv"].verdict == Verdict.FALLBACK
    assert old["engine.kv"].needs[0].name == "vllm:gpu_cache_usage_perc"
    assert "vllm:gpu_cache_usage_perc" in old["engine.kv"].reasons[0]


def test_a_panel_whose_metric_is_not_exposed_is_unavailable_with_the_reason() -> None:
    statuses = {s.id: s for s in capability_map(fleet=_fleet_exposing("vllm:kv_cache_usage_perc"))}
    spec_decode = statuses["engine.spec_decode"]
    assert spec_decode.verdict == Verdict.UNAVAILABLE
    assert any("speculative-decoding" in reason for reason in spec_decode.reasons)
    gpu = statuses["gpu.util"]
    assert gpu.verdict == Verdict.UNAVAILABLE and gpu.needs[0].name is None


def test_a_panel_some_replicas_cannot_feed_says_which_ones() -> None:
    fleet = fleet_named("partly")
    for instance, name in (
        ("a:1", "vllm:kv_cache_usage_perc"),
        ("b:1", "vllm:num_requests_running"),
    ):
        samples = [(name, M, 0.5)]
        endpoint_with_scrapes(fleet, instance, [(0, samples)], types={name: "gauge"})
    kv = {s.id: s for s in capability_map(fleet=fleet)}["engine.kv"]
    assert kv.verdict == Verdict.READY
    assert any("1 of 2 endpoints" in r and "b:1" in r for r in kv.reasons), kv.reasons
