"""Every report on one endpoint at once, from either parser."""

from __future__ import annotations

import dataclasses

import pytest

from inventory.catalog import (
    detect_endpoint,
    profile_endpoint,
)
from tests.inventory.catalog.payloads import (
    CURRENT,
    V0,
    V1_010,
    V1_08,
    Payload,
    checked_in,
    dcgm_text,
    families,
    via_prometheus_client,
)


@pytest.mark.parametrize("payload", [CURRENT, V1_010, V1_08, V0], ids=lambda p: p.help_running)
def test_prometheus_client_families_give_the_same_profile_as_the_strict_parser(
    payload: Payload,
) -> None:
    ours, theirs = (
        profile_endpoint(families(payload.text())),
        profile_endpoint(via_prometheus_client(payload.text())),
    )
    assert (ours.kind, ours.dialect, ours.engines) == (theirs.kind, theirs.dialect, theirs.engines)
    assert ours.data_parallel.multiprocess is theirs.data_parallel.multiprocess is False


def test_detect_endpoint_flattens_the_profile_for_the_inventory() -> None:
    profile = detect_endpoint(checked_in("vllm_dp8.prom"))
    assert detect_endpoint is profile_endpoint
    assert (profile.kind, profile.dialect) == ("engine", "current")
    assert profile.engines == tuple(str(i) for i in range(8))
    assert profile.dcgm is None
    assert set(profile.dialect_report.evidence) <= set(profile.evidence)
    assert "latency buckets: post-2025-04-07 set" in profile.evidence
    assert len(profile.evidence) == len(set(profile.evidence))


def test_dcgm_profile_carries_the_label_report() -> None:
    profile = profile_endpoint(families(dcgm_text()))
    assert profile.dcgm is not None and profile.dcgm.host_labels == ("Hostname",)
    assert profile.max_model_len.at_least is None


def test_reports_are_frozen_and_the_same_input_gives_the_same_answer() -> None:
    fams = families(V1_010.text())
    first, second = profile_endpoint(fams), profile_endpoint(fams)
    assert first == second
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.dialect_report.dialect = "current"  # type: ignore[misc]  # the write must fail
