"""A period's usage read from fleets fleetsim recorded, against the simulator's own
counts: per-tenant tokens from its gateway, GPU-hours from the GPUs it placed, and
engine tokens across a rollout that restarts every replica (counters reset mid-period)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from capacity.usage import period_usage
from inventory.history import history_import
from inventory.models import Fleet
from tests.capacity.conftest import SimTruth, record

pytestmark = pytest.mark.django_db


def _period(truth: SimTruth) -> tuple[datetime, datetime]:
    # From before the first scrape to the last: the whole recording.
    return (
        datetime.fromtimestamp(truth.start - 60, UTC),
        datetime.fromtimestamp(truth.end, UTC),
    )


def test_per_tenant_output_tokens_are_the_gateways_own_counts(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    start, end = _period(sim_truth)
    usage = period_usage(sim_fleet, start=start, end=end, backend="local")
    read = {(r.labels["tenant"], r.model_name): r.output_tokens for r in usage.rows}
    assert {r.source for r in usage.rows} == {"gateway"}
    for key, tokens in sim_truth.tenant_output_tokens.items():
        # The first scrape comes one step after the counters start: what the gateway
        # counted before it is all increase() cannot see.
        assert read[key] == pytest.approx(tokens, rel=0.03), key


def test_gpu_hours_are_the_gpus_the_simulator_placed_times_the_time_seen(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    start, end = _period(sim_truth)
    usage = period_usage(sim_fleet, start=start, end=end, backend="local")
    hours = (sim_truth.end - sim_truth.start) / 3600
    for use in usage.models:
        assert use.gpu_hours == pytest.approx(sim_truth.gpus[use.model_name] * hours, rel=0.03)
        assert use.busy_fraction is not None and 0 < use.busy_fraction <= 1
        assert "DCGM_FI_DEV_GPU_UTIL" in use.busy_source
        assert use.good_fraction is not None and use.good_fraction.lower <= use.good_fraction.upper


def test_without_dcgm_gpu_hours_are_not_measured_unless_gpus_per_replica_is_entered(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    sim_fleet.endpoints.filter(kind="dcgm").update(enabled=False)
    start, end = _period(sim_truth)
    usage = period_usage(sim_fleet, start=start, end=end, backend="local")
    assert all(use.gpu_hours is None for use in usage.models)
    assert all("not measured" in use.gpu_hours_source for use in usage.models)
    entered = period_usage(sim_fleet, start=start, end=end, backend="local", gpus_per_replica=1)
    hours = (sim_truth.end - sim_truth.start) / 3600
    small = next(u for u in entered.models if u.model_name == "llama-3.1-8b-instruct")
    assert small.gpu_hours == pytest.approx(2 * hours, rel=0.03)  # two replicas, one GPU each
    assert "as entered" in small.gpu_hours_source and small.busy_fraction is None


def test_a_period_without_data_reads_no_usage(sim_fleet: Fleet) -> None:
    start = datetime(2020, 1, 1, tzinfo=UTC)
    usage = period_usage(sim_fleet, start=start, end=start + timedelta(days=1), backend="local")
    assert usage.rows == () and usage.models == ()
    assert any("no per-tenant traffic" in note for note in usage.notes)


def test_a_period_that_ends_before_it_starts_is_refused(sim_fleet: Fleet) -> None:
    now = datetime.now(UTC)
    with pytest.raises(ValueError, match="ends before it starts"):
        period_usage(sim_fleet, start=now, end=now - timedelta(hours=1), backend="local")


@pytest.fixture(scope="module")
def restart_truth(tmp_path_factory: pytest.TempPathFactory) -> SimTruth:
    path: Path = tmp_path_factory.mktemp("restart") / "restart.om"
    return record(path, scenario="cold-restart", minutes=20, seed=3)


def test_engine_tokens_across_counter_resets_match_what_the_gateway_counted(
    restart_truth: SimTruth,
) -> None:
    fleet = history_import(fleet_slug="restart", path=restart_truth.path).fleet
    start, end = _period(restart_truth)
    usage = period_usage(fleet, start=start, end=end, backend="local")
    served: dict[str, int] = {}
    for (_, model), tokens in restart_truth.tenant_output_tokens.items():
        served[model] = served.get(model, 0) + tokens
    for use in usage.models:
        # Every replica restarted inside the period: a reset read as a drop would make
        # this far smaller (or negative), which increase() must not.
        assert use.engine_output_tokens is not None
        assert use.engine_output_tokens == pytest.approx(served[use.model_name], rel=0.05)
    assert all(r.output_tokens >= 0 and r.requests_ok >= 0 for r in usage.rows)


def test_a_period_the_store_holds_only_part_of_says_which_part(
    sim_fleet: Fleet, sim_truth: SimTruth
) -> None:
    """Usage before the recording is unknown, not zero: the GPU-hours of a day that holds
    an hour of scrapes are that hour's, and the usage says so."""
    _, end = _period(sim_truth)
    usage = period_usage(sim_fleet, start=end - timedelta(days=1), end=end, backend="local")
    first = datetime.fromtimestamp(sim_truth.start, UTC)
    assert usage.coverage.startswith(f"the embedded store holds {first:%Y-%m-%d %H:%M} .. ")
    assert "of 24.0 h): usage, GPU-hours and costs cover that part only" in usage.coverage
    whole = period_usage(sim_fleet, start=_period(sim_truth)[0], end=end, backend="local")
    assert whole.coverage == ""
    before = datetime(2020, 1, 1, tzinfo=UTC)
    empty = period_usage(sim_fleet, start=before, end=before + timedelta(days=1), backend="local")
    assert empty.coverage.startswith("the embedded store holds none of this period")
