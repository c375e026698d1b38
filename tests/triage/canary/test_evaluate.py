"""Canary against control on a fleet fleetsim recorded with one GPU throttled: the
healthy replica recovers the ITL objective, the throttled one does not, as the
simulator's manifest says; too short a window or a threshold between bucket edges is
inconclusive."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet
from triage.canary import BreachedObjective, CanaryEvaluation, canary_evaluate, sample_size

pytestmark = pytest.mark.django_db

END = 1_794_999_990.0  # on the 30 s grid
ITL_METRIC = "vllm:inter_token_latency_seconds"
# The model's two replicas together had ~96.3% of token gaps within 25 ms in the
# incident (the healthy one ~98%, the throttled one ~94.5%): below a 97% target.
ITL = BreachedObjective("itl", 0.025, 0.97, 0.963, slo="throttle/chat")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    history = History(replicas=3, scenario="gpu-throttle", hours=0.5, step=30, at=600.0,
                      seed=0, end=END)  # fmt: skip
    path = tmp_path_factory.mktemp("canary") / "throttle.om"
    history.write_openmetrics(path)
    return path, history.manifest


@pytest.fixture(scope="module")
def shared_fleet(
    django_db_setup: None, django_db_blocker: Any, recorded: tuple[Path, dict[str, Any]]
) -> Iterator[int]:
    """Imported once per module, outside the tests' transactions (as the capacity tests
    do): an import takes seconds, and no test here changes the fleet."""
    with django_db_blocker.unblock(), override_settings(FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK=True):
        fleet = history_import(fleet_slug="throttle", path=recorded[0]).fleet
    yield fleet.pk
    with django_db_blocker.unblock():
        Fleet.objects.filter(pk=fleet.pk).delete()


@pytest.fixture
def fleet(shared_fleet: int) -> Fleet:
    return Fleet.objects.get(pk=shared_fleet)


@pytest.fixture
def manifest(recorded: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    return recorded[1]


def roles(manifest: dict[str, Any]) -> tuple[str, str, str]:
    """(model, throttled engine, a healthy engine of the same model), from the manifest."""
    (affected,) = manifest["affected_replicas"]
    model = affected["model_name"]
    healthy = next(
        r
        for r in manifest["replicas"]
        if r["model_name"] == model and r["index"] != affected["index"]
    )
    return model, affected["instances"]["vllm"], healthy["instances"]["vllm"]


def incident(manifest: dict[str, Any]) -> tuple[datetime, datetime]:
    window = manifest["window"]
    return (
        datetime.fromtimestamp(window["start"], UTC),
        datetime.fromtimestamp(window["end"], UTC),
    )


def evaluate(
    fleet: Fleet, manifest: dict[str, Any], *, canary: str, control: str, **more: Any
) -> CanaryEvaluation:
    model, _, _ = roles(manifest)
    start, end = incident(manifest)
    options: dict[str, Any] = {"objective": ITL, "start": start, "end": end,
                               "min_requests": sample_size(ITL).requests} | more  # fmt: skip
    return canary_evaluate(fleet=fleet, model_name=model, canary_instances=(canary,),
                           control_instances=(control,), backend="local", **options)  # fmt: skip


def test_the_manifest_throttles_one_of_two_replicas_of_a_model(manifest: dict[str, Any]) -> None:
    assert manifest["expected_triage_branch"] == "tpot.straggler.gpu_throttle"
    model, throttled, healthy = roles(manifest)
    assert throttled != healthy and model == "llama-3.1-8b-instruct"


def test_traffic_on_the_healthy_replica_recovers_the_itl_objective(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    _, throttled, healthy = roles(manifest)
    found = evaluate(fleet, manifest, canary=healthy, control=throttled)
    assert found.answer == "recovered", found.reason
    assert found.next_step.startswith("Document the evidence")
    assert found.canary.good.value is not None and found.canary.good.value >= ITL.target
    assert found.canary.requests.value is not None
    assert found.canary.requests.value >= found.min_requests
    assert found.control.good.value is not None and found.control.good.value < ITL.target


def test_the_throttled_replica_as_canary_does_not_recover(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    _, throttled, healthy = roles(manifest)
    found = evaluate(fleet, manifest, canary=throttled, control=healthy)
    assert found.answer == "not_recovered", found.reason
    assert "misses the objective" in found.reason
    assert found.next_step.startswith("Rollback / isolate")


def test_every_figure_names_its_metric_window_backend_and_requests(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    _, throttled, healthy = roles(manifest)
    found = evaluate(fleet, manifest, canary=healthy, control=throttled)
    for side in (found.canary, found.control):
        gaps = side.observations
        assert gaps is not None and gaps.value is not None
        for figure in (side.good, side.requests, side.error_ratio, gaps):
            assert "over the 900 s ending 2026-" in figure.source, figure
            assert "embedded store" in figure.source and figure.requests, figure
        assert ITL_METRIC in side.good.source and ITL_METRIC in gaps.source
        assert "vllm:e2e_request_latency_seconds" in side.requests.source
        assert "vllm:request_success_total" in side.error_ratio.source
        requests = side.requests.value
        assert requests is not None and gaps.value > requests  # many token gaps per request
    assert found.to_dict()["canary"]["instances"] == [healthy]


def test_a_canary_with_too_few_requests_is_inconclusive_and_says_how_many(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    _, throttled, healthy = roles(manifest)
    _, end = incident(manifest)
    found = evaluate(fleet, manifest, canary=healthy, control=throttled,
                     start=end - timedelta(seconds=60))  # fmt: skip
    assert found.answer == "inconclusive"
    had = found.canary.requests.value
    assert had is not None and 0 < had < found.min_requests
    assert f"had {had:.0f} in the window and needs {found.min_requests}" in found.reason


def test_an_interval_straddling_the_target_is_inconclusive(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    # 30 ms is not an ITL bucket edge: the healthy replica's fraction lies between its
    # fractions at 25 ms (~98.2%) and 50 ms (~99.4%), on both sides of a 99% target.
    between = BreachedObjective("itl", 0.03, 0.99, 0.963)
    _, throttled, healthy = roles(manifest)
    found = evaluate(fleet, manifest, canary=healthy, control=throttled, objective=between,
                     min_requests=100)  # fmt: skip
    assert found.answer == "inconclusive", found.reason
    assert "straddles the target" in found.reason
    low, high = found.canary.good_lower, found.canary.good_upper
    assert low is not None and high is not None and low < 0.99 <= high
    assert found.canary.good.value is None and "not a bucket edge" in found.canary.good.bound


def test_the_success_objective_is_read_from_finish_reasons(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    success = BreachedObjective("success", None, 0.99, 0.98)
    _, throttled, healthy = roles(manifest)
    found = evaluate(fleet, manifest, canary=healthy, control=throttled, objective=success,
                     min_requests=1000)  # fmt: skip
    assert found.answer == "recovered", found.reason
    errors = found.canary.error_ratio.value
    assert errors is not None and found.canary.good.value == pytest.approx(1.0 - errors)
    assert "vllm:request_success_total" in found.canary.good.source


def test_a_window_that_ends_before_it_starts_is_refused(
    fleet: Fleet, manifest: dict[str, Any]
) -> None:
    _, throttled, healthy = roles(manifest)
    start, end = incident(manifest)
    with pytest.raises(ValueError):
        evaluate(fleet, manifest, canary=healthy, control=throttled, start=end, end=start)
