"""Selectors against what a recorded fleet really exposes: live, partly blind with the
replicas named, blind with the rename, never matched, suspicious."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from blindspots.types import Matcher
from blindspots.verdicts import check_selectors
from inventory.models import Fleet
from inventory.registration import targets_import
from inventory.services import fleet_scrape
from inventory.targets import TargetSpec
from tests.blindspots.fleets_b import R0, R1, load, record, selector
from tests.inventory.badservers import send_body, serving

OLD = "vllm:gpu_cache_usage_perc"
NEW = "vllm:kv_cache_usage_perc"


@pytest.fixture(scope="module")
def current_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verdicts") / "current.om"
    record(path, dialect="current")
    return path


@pytest.fixture(scope="module")
def mixed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verdicts") / "mixed.om"
    record(path, dialect="current", dialect_of={1: "v1-0.8"})
    return path


@pytest.fixture
def current(db: None, current_file: Path) -> Fleet:
    return load("current", current_file)


@pytest.fixture
def mixed(db: None, mixed_file: Path) -> Fleet:
    return load("mixed", mixed_file)


def test_the_old_cache_name_is_partly_blind_on_a_fleet_with_one_old_replica(mixed: Fleet) -> None:
    [verdict] = check_selectors(mixed, [selector(OLD)])

    assert verdict.verdict == "partly blind"
    assert verdict.expected == (R0, R1)
    assert verdict.matching == (R1,)
    assert f"missing on {R0}: not exposed" in verdict.why
    assert "renamed vllm:kv_cache_usage_perc" in verdict.why
    assert verdict.replacement == NEW
    assert verdict.since is None
    assert verdict.since_text == "never exposed while FleetScope watched"


def test_the_new_name_is_partly_blind_there_too_with_the_old_replica_named(mixed: Fleet) -> None:
    [verdict] = check_selectors(mixed, [selector(NEW)])

    assert verdict.verdict == "partly blind"
    assert verdict.matching == (R0,)
    assert R1 in verdict.why
    assert verdict.replacement is None


def test_the_old_cache_name_is_blind_on_a_current_fleet_with_the_rename(current: Fleet) -> None:
    [verdict] = check_selectors(current, [selector(OLD)])

    assert verdict.verdict == "blind"
    assert verdict.matching == ()
    assert verdict.why.startswith(
        "vllm:gpu_cache_usage_perc was renamed in 0.9.2, hidden from 0.11 "
        "(gone since 2025-11-25 (#29330); renamed vllm:kv_cache_usage_perc)"
    )
    assert verdict.replacement == NEW


def test_a_rule_on_current_names_is_live(current: Fleet) -> None:
    verdicts = check_selectors(
        current,
        [
            selector(NEW, Matcher("model_name", "=~", "llama.*")),
            selector("vllm:prompt_tokens_total", functions=("rate", "sum")),
            selector(
                "vllm:time_to_first_token_seconds_bucket",
                functions=("rate", "histogram_quantile"),
            ),
        ],
    )

    assert [v.verdict for v in verdicts] == ["live", "live", "live"]
    assert verdicts[0].why == "exposed by all 2 engine replicas"
    assert verdicts[0].matching == (R0, R1)


def test_a_model_the_fleet_does_not_serve_is_blind_with_the_values_it_has(
    current: Fleet,
) -> None:
    [verdict] = check_selectors(current, [selector(NEW, Matcher("model_name", "=", "mistral"))])

    assert verdict.verdict == "blind"
    assert "model_name is llama-3.1-8b-instruct, never ='mistral'" in verdict.why


def test_a_template_variable_turned_wildcard_makes_a_match_suspicious(current: Fleet) -> None:
    wild = Matcher("model_name", "=~", ".*", from_variable=True)
    [verdict] = check_selectors(current, [selector(NEW, wild)])

    assert verdict.verdict == "suspicious"
    assert 'model_name=~".*" came from a template variable' in verdict.why


def test_rate_over_a_gauge_is_suspicious(current: Fleet) -> None:
    [verdict] = check_selectors(current, [selector(NEW, functions=("rate",))])

    assert verdict.verdict == "suspicious"
    assert "a gauge: rate() needs a counter" in verdict.why


def test_a_typo_was_never_matched_and_the_near_name_is_suggested(current: Fleet) -> None:
    [verdict] = check_selectors(current, [selector("vllm:kv_cache_usge_perc")])

    assert verdict.verdict == "never matched"
    assert "in no catalog entry and no endpoint exposes it" in verdict.why
    assert verdict.why.endswith("did you mean vllm:kv_cache_usage_perc?")
    assert verdict.since_text == "never exposed while FleetScope watched"


def test_a_recorded_series_is_live_when_a_rule_records_it(current: Fleet) -> None:
    recorded = selector("job:ttft_seconds:p99")
    without, with_rule, seen = (
        check_selectors(current, [recorded])[0],
        check_selectors(current, [recorded], recorded_names={"job:ttft_seconds:p99"})[0],
        check_selectors(current, [recorded], prometheus_names={"job:ttft_seconds:p99"})[0],
    )

    assert without.verdict == "never matched"
    assert (with_rule.verdict, seen.verdict) == ("live", "live")
    assert "recorded by a rule" in with_rule.why
    assert "seen by Prometheus" in seen.why


def test_a_name_matcher_regex_matches_by_regex(current: Fleet) -> None:
    by_name = selector(None, Matcher("__name__", "=~", "vllm:kv_cache_.*"), text="{__name__}")
    [verdict] = check_selectors(current, [by_name])

    assert verdict.verdict == "live"


def histogram(le: str) -> bytes:
    return (
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        f'vllm:e2e_request_latency_seconds_bucket{{model_name="m",engine="0",le="{le}"}} 1\n'
        'vllm:e2e_request_latency_seconds_bucket{model_name="m",engine="0",le="+Inf"} 2\n'
        'vllm:e2e_request_latency_seconds_sum{model_name="m",engine="0"} 3\n'
        'vllm:e2e_request_latency_seconds_count{model_name="m",engine="0"} 2\n'
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{model_name="m",engine="0"} 1\n'
    ).encode()


def test_an_le_written_as_2_matches_only_the_replica_that_spells_it_so(db: None) -> None:
    def go(h: BaseHTTPRequestHandler) -> None:
        send_body(h, histogram("2"))

    def python(h: BaseHTTPRequestHandler) -> None:
        send_body(h, histogram("2.0"))

    bucket = "vllm:e2e_request_latency_seconds_bucket"
    le = selector(bucket, Matcher("le", "=", "2"), functions=("rate",))
    with serving(go) as a, serving(python) as b:
        specs = [TargetSpec(a.url(), "vllm", {}), TargetSpec(b.url(), "vllm", {})]
        fleet = targets_import(fleet_slug="le", specs=specs).fleet
        fleet_scrape(fleet_id=fleet.pk)
        go_instance, python_instance = a.url().split("/")[2], b.url().split("/")[2]
        [verdict] = check_selectors(fleet, [le])
        [only_python] = check_selectors(fleet, [selector(bucket, Matcher("le", "=", "2.5"))])

    assert verdict.verdict == "suspicious"
    assert verdict.matching == (go_instance,)
    assert f'{python_instance} writes le="2.0"' in verdict.why
    assert "compares le values as strings" in verdict.why
    assert only_python.verdict == "blind"


def test_a_name_outside_the_catalog_is_expected_only_of_the_kind_that_exposes_it(
    current: Fleet,
) -> None:
    [verdict] = check_selectors(current, [selector("fleetscope_prober_golden_set_size")])

    assert verdict.verdict == "live"
    assert len(verdict.expected) == 1
