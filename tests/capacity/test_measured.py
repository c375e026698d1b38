"""The review's measured inputs, read from a fleet fleetsim recorded, against what the
simulator itself configured (its KV allocation, its replica count)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from capacity.measured import FleetInputError, fleet_inputs, fleet_measurements, fleet_models
from inventory.models import Endpoint, Fleet
from tests.capacity.conftest import SimTruth

pytestmark = pytest.mark.django_db

SMALL, LARGE = "llama-3.1-8b-instruct", "llama-3.1-70b-instruct"


def test_the_models_a_fleet_serves_come_from_its_engines_labels(sim_fleet: Fleet) -> None:
    assert fleet_models(sim_fleet) == [LARGE, SMALL]


def test_kv_tokens_from_cache_config_are_what_the_simulator_allocated(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    for model in (SMALL, LARGE):
        found = fleet_measurements(sim_fleet, model_name=model, backend="local")
        assert found.cache_config is not None
        assert found.cache_config.kv_tokens == pytest.approx(sim_truth.kv_tokens[model], abs=16)
        assert found.cache_config.gpu_memory_utilization == pytest.approx(0.9)


def test_replica_count_and_lengths_are_measured_with_their_source(sim_fleet: Fleet) -> None:
    found = fleet_measurements(sim_fleet, model_name=SMALL, backend="local")
    assert found.current_replicas.value == 2
    p50 = found.prompt_tokens[0.5]
    assert p50.origin == "measured" and p50.value is not None and p50.value > 0
    assert "vllm:request_prompt_tokens" in p50.source and "embedded store" in p50.source
    assert "within the bucket" in p50.note  # a bucket quantile says which bucket


def test_a_percentile_past_the_last_bucket_edge_is_a_floor_not_a_value(sim_fleet: Fleet) -> None:
    # llama-3.1-70b serves 16k contexts, so its prompt buckets end at 10000 tokens: more
    # than 1% of its RAG prompts are longer.
    found = fleet_measurements(sim_fleet, model_name=LARGE, backend="local")
    p99 = found.prompt_tokens[0.99]
    assert p99.value is None and p99.origin == "needs measurement"
    assert p99.note.startswith("above 10000 tokens, the last bucket edge")


def test_peak_arrival_rate_is_a_high_percentile_of_five_minute_rates(sim_fleet: Fleet) -> None:
    found = fleet_measurements(sim_fleet, model_name=SMALL, backend="local")
    peak = found.lambda_peak
    assert peak.value is not None and peak.value > 0
    assert "p99 of" in peak.source and "5-minute rates of vllm:request_success_total" in peak.source
    concurrency = found.concurrency
    assert concurrency.value is not None and concurrency.value > 0


def test_mu_good_without_busy_hours_is_needs_measurement_with_the_reason(
    sim_fleet: Fleet,
) -> None:
    # Twenty minutes hold no whole hour: the SLO app cannot say how many good requests a
    # replica sustains, and the review must not fill the gap.
    found = fleet_measurements(sim_fleet, model_name=SMALL, backend="local")
    assert found.mu_good.value is None
    assert found.mu_good.origin == "needs measurement"
    assert "SLO chat" in found.mu_good.note


def test_mu_good_without_an_slo_says_one_is_needed(sim_fleet: Fleet) -> None:
    sim_fleet.slos.all().delete()
    found = fleet_measurements(sim_fleet, model_name=SMALL, backend="local")
    assert found.mu_good.value is None and "no SLO selects" in found.mu_good.note


def test_an_empty_store_measures_nothing_and_says_so(db: None) -> None:
    fleet = Fleet.objects.create(slug="empty", name="Empty")
    found = fleet_measurements(fleet, model_name=SMALL, backend="local")
    assert "holds no samples" in found.window
    assert found.lambda_peak.value is None and found.cache_config is None
    assert found.lambda_peak.key == "lambda_peak_requests_per_second"
    assert all(not q.known for q in found.prompt_tokens.values())


def test_a_fleet_without_engines_names_what_is_missing(sim_fleet: Fleet) -> None:
    Endpoint.objects.filter(fleet=sim_fleet, kind="vllm").update(enabled=False)
    found = fleet_measurements(sim_fleet, model_name=SMALL, backend="local")
    assert found.current_replicas.value is None
    assert "no enabled engine" in found.current_replicas.note
    assert not any(math.isfinite(q.value or math.nan) for q in found.output_tokens.values())


def test_fleet_inputs_needs_the_model_when_a_fleet_serves_several(sim_fleet: Fleet) -> None:
    with pytest.raises(FleetInputError, match="--model: fleet sim serves"):
        fleet_inputs("sim", model_name=None, backend="local")
    with pytest.raises(FleetInputError, match="does not serve 'gpt-5'"):
        fleet_inputs("sim", model_name="gpt-5", backend="local")
    with pytest.raises(FleetInputError, match="no fleet 'nope'"):
        fleet_inputs("nope", model_name=None, backend="local")


def test_the_command_reads_the_fleet_and_entered_flags_win(
    sim_fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    call_command(
        "capacity", "--fleet", "sim", "--model", SMALL, "--params", "8030261248",
        "--dtype", "bf16", "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
        "--attention-heads", "32", "--gpu", "H100-80GB", "--rho-target", "0.7",
        "--failure-reserve", "1", "--mu-good", "4", "--json",
    )  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    lines = {
        key: line
        for ledger in data["ledgers"]
        for line in ledger["lines"]
        for key in line
        if key.endswith(("_per_second", "_tokens", "_replicas"))
    }
    assert lines["mu_good_requests_per_second"]["origin"] == "entered"
    assert lines["lambda_peak_requests_per_second"]["origin"] == "measured"
    assert data["r_total_replicas"] >= 2
    with pytest.raises(CommandError, match="--model: fleet sim does not serve"):
        call_command("capacity", "--fleet", "sim", "--model", "gpt-5", "--params", "1",
                     "--dtype", "bf16", "--layers", "1", "--kv-heads", "1", "--head-dim", "1",
                     "--gpu", "H100-80GB")  # fmt: skip


def test_measurements_at_a_time_before_the_history_find_nothing(sim_fleet: Fleet) -> None:
    found = fleet_measurements(
        sim_fleet, model_name=SMALL, backend="local", at=datetime(2020, 1, 1, tzinfo=UTC)
    )
    assert found.lambda_peak.value is None
    assert "holds no samples before this time" in found.window
