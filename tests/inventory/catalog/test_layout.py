"""Data-parallel ranks and registry mode, and dcgm-exporter label spellings."""

from __future__ import annotations

import pytest

from inventory.catalog import (
    dcgm_host,
    dcgm_uuid,
    detect_data_parallel,
    detect_dcgm_labels,
)
from tests.inventory.catalog.payloads import (
    GATEWAY_TEXT,
    HTTP_ONLY_TEXT,
    Payload,
    checked_in,
    dcgm_text,
    families,
)


def test_data_parallel_server_in_multiprocess_mode_is_recognised() -> None:
    report = detect_data_parallel(checked_in("vllm_dp8.prom"))
    assert report.engines == tuple(str(i) for i in range(8))
    assert (report.size, report.multiprocess) == (8, True)
    assert "multiprocess: no python_*/process_* families and no _created series" in report.evidence


def test_single_engine_server_is_single_process() -> None:
    report = detect_data_parallel(checked_in("vllm_1engine.prom"))
    assert (report.engines, report.multiprocess) == (("0",), False)
    assert "single-process: _created series" in report.evidence


def test_single_process_is_also_read_from_process_families() -> None:
    report = detect_data_parallel(families(HTTP_ONLY_TEXT))
    assert report.multiprocess is False
    assert report.evidence == ("single-process: process families (process_open_fds)",)


def test_a_replica_owning_only_some_global_ranks_is_pointed_out() -> None:
    report = detect_data_parallel(
        families(Payload(gauges=("vllm:num_requests_running",), engines=("3",)).text())
    )
    assert report.engines == ("3",)
    assert "no engine 0: an externally load-balanced replica owning some DP ranks" in (
        report.evidence
    )


def test_engine_ranks_sort_numerically() -> None:
    payload = Payload(gauges=("vllm:num_requests_running",), engines=("10", "2", "0", "1"))
    assert detect_data_parallel(families(payload.text())).engines == ("0", "1", "2", "10")


def test_multiprocess_mode_is_left_open_without_vllm_counters_or_histograms() -> None:
    only_gauges = Payload(gauges=("vllm:num_requests_running",)).text()
    assert detect_data_parallel(families(only_gauges)).multiprocess is None
    assert detect_data_parallel(families(GATEWAY_TEXT)).multiprocess is None
    assert detect_data_parallel(families(dcgm_text())).multiprocess is None


@pytest.mark.parametrize(
    ("host", "uuid", "evidence"),
    [
        ("Hostname", "UUID", "host label Hostname, as in every released dcgm-exporter"),
        ("hostname", "UUID", "host label hostname: dcgm-exporter main after 2026-05-12"),
        ("Hostname", "uuid", "lowercase uuid: the exporter runs with the old-style label flag"),
    ],
)
def test_dcgm_host_and_uuid_label_spellings_are_reported(
    host: str, uuid: str, evidence: str
) -> None:
    report = detect_dcgm_labels(families(dcgm_text(host, uuid)))
    assert (report.host_labels, report.uuid_labels) == ((host,), (uuid,))
    assert (report.gpus, report.driver_versions) == (("0", "1"), ("570.133.20",))
    assert evidence in report.evidence
    assert "Kubernetes pod mapping on: join to vLLM by pod/namespace" in report.evidence


def test_dcgm_exporters_of_two_versions_behind_one_scrape_show_both_host_spellings() -> None:
    newer_gpu = dcgm_text("hostname", gpus=2).splitlines()[-1]
    report = detect_dcgm_labels(families(dcgm_text("Hostname", gpus=1) + newer_gpu + "\n"))
    assert report.host_labels == ("Hostname", "hostname")
    assert "both Hostname and hostname: exporters of different versions" in report.evidence


@pytest.mark.parametrize(
    ("labels", "host", "uuid"),
    [
        ({"Hostname": "a", "UUID": "GPU-1"}, "a", "GPU-1"),
        ({"hostname": "b", "uuid": "GPU-2"}, "b", "GPU-2"),
        ({"gpu_uuid": "GPU-3"}, None, "GPU-3"),
        ({}, None, None),
    ],
)
def test_dcgm_host_and_uuid_accept_every_spelling(
    labels: dict[str, str], host: str | None, uuid: str | None
) -> None:
    assert (dcgm_host(labels), dcgm_uuid(labels)) == (host, uuid)
