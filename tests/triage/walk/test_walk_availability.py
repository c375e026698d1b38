"""The availability node says which of its signals held (replicas missing scrapes, the
gateway's error share, requests per finished request), each with its figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.walk.scenario_walks import history_of, walk_history


@pytest.mark.django_db
def test_availability_names_the_gateway_error_share_that_rose(
    tmp_path: Path, loopback: None
) -> None:
    walk = walk_history(history_of("gateway-errors", seed=1), tmp_path)
    node = walk.node("availability")
    assert node.verdict == "supported"
    assert "the gateway's 4xx+5xx share rose to " in node.reason, node.reason
    assert "missed scrapes" not in node.reason
    (share,) = [f for f in node.figures if f.name == "gateway_error_share"]
    assert share.value is not None and share.baseline is not None
    assert share.value > share.baseline


@pytest.mark.django_db
def test_availability_names_the_replica_that_missed_its_scrapes(
    tmp_path: Path, loopback: None
) -> None:
    history = history_of("replica-down", seed=1)
    walk = walk_history(history, tmp_path)
    node = walk.node("availability")
    (affected,) = history.manifest["affected_replicas"]
    instance = affected["instances"]["vllm"]
    assert node.reason.startswith(f"{instance} missed scrapes"), node.reason
    assert "4xx+5xx" not in node.reason
    assert node.replicas == (instance,)


@pytest.mark.django_db
def test_availability_is_ruled_out_on_a_steady_fleet(tmp_path: Path, loopback: None) -> None:
    node = walk_history(history_of("steady", seed=1), tmp_path).node("availability")
    assert node.verdict == "ruled_out"
    assert node.reason == "every replica answered its scrapes and the gateway's errors held"


@pytest.mark.django_db
@pytest.mark.parametrize("counted", (True, False), ids=("retry-counter", "no-retry-counter"))
def test_the_retry_check_says_it_reads_amplification_only_when_the_counter_is_missing(
    counted: bool, tmp_path: Path, loopback: None
) -> None:
    hide = () if counted else ("fleetscope_gateway_retries",)
    walk = walk_history(history_of("retry-storm", seed=1), tmp_path, hide=hide)
    (figure,) = walk.node("availability.retry_storm").figures
    if counted:
        assert figure.name == "gateway_retry_rate"
    else:
        assert figure.name == "gateway_requests_per_finished_request"
        assert figure.source.startswith(
            "gateway requests / engine finished requests (the gateway has no retry counter), "
        )
