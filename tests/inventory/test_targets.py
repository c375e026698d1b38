from __future__ import annotations

import json

import pytest

from inventory.identity import instance_candidates, normalised_target
from inventory.targets import TargetFileError, parse_target_file, targets_from_prometheus


def test_file_sd_groups_become_metrics_urls_with_labels() -> None:
    text = json.dumps(
        [
            {
                "targets": ["10.0.0.5:8000", "10.0.0.6:8000"],
                "labels": {"model": "llama", "zone": "a"},
            },
            {"targets": ["10.0.0.5:9400"], "labels": {"kind": "dcgm", "__metrics_path__": "/m"}},
        ]
    )
    specs = parse_target_file(text)
    assert [(s.url, s.kind) for s in specs] == [
        ("http://10.0.0.5:8000/metrics", "vllm"),
        ("http://10.0.0.6:8000/metrics", "vllm"),
        ("http://10.0.0.5:9400/m", "dcgm"),
    ]
    assert specs[0].labels == {"model": "llama", "zone": "a"}
    assert specs[2].labels == {}


def test_yaml_endpoint_list_is_accepted() -> None:
    text = (
        "endpoints:\n"
        "  - url: http://10.0.0.7:8000/metrics\n"
        "    kind: gateway\n"
        "    labels: {tenant: acme}\n"
    )
    (spec,) = parse_target_file(text)
    assert (spec.url, spec.kind, spec.labels) == (
        "http://10.0.0.7:8000/metrics",
        "gateway",
        {"tenant": "acme"},
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json: [", "neither JSON nor YAML"),
        ('{"targets": []}', "expected a file_sd list"),
        ('[{"labels": {}}]', "group 1: needs a 'targets' list"),
        ('[{"targets": ["h:1/evil"]}]', "is not host:port"),
        ('[{"targets": ["h:1"], "labels": {"kind": "database"}}]', "kind must be one of"),
        ('[{"targets": ["h:1"], "labels": {"a": ["x"]}}]', "must map a name to a string"),
        ('{"endpoints": [{"kind": "vllm"}]}', "endpoint 1: needs a 'url' string"),
    ],
)
def test_bad_target_files_are_rejected_with_the_place_and_reason(text: str, message: str) -> None:
    with pytest.raises(TargetFileError, match=message):
        parse_target_file(text)


def test_prometheus_active_targets_keep_public_labels_and_drop_internal_ones() -> None:
    payload = {
        "status": "success",
        "data": {
            "activeTargets": [
                {
                    "scrapeUrl": "http://10.0.0.5:8000/metrics",
                    "labels": {"instance": "10.0.0.5:8000", "job": "vllm", "__tmp": "x"},
                },
                {"scrapeUrl": "http://10.0.0.5:9400/metrics", "labels": {"kind": "dcgm"}},
                {"labels": {}},
            ]
        },
    }
    specs = targets_from_prometheus(payload)
    assert [(s.url, s.kind) for s in specs] == [
        ("http://10.0.0.5:8000/metrics", "vllm"),
        ("http://10.0.0.5:9400/metrics", "dcgm"),
    ]
    assert specs[0].labels == {"instance": "10.0.0.5:8000", "job": "vllm"}


def test_prometheus_answer_without_active_targets_is_an_error() -> None:
    with pytest.raises(TargetFileError, match="activeTargets"):
        targets_from_prometheus({"status": "success", "data": {}})


def test_a_url_that_two_prometheus_jobs_scrape_is_one_target_with_the_first_jobs_labels() -> None:
    url = "http://10.0.0.5:8000/metrics"
    payload = {
        "data": {
            "activeTargets": [
                {"scrapeUrl": url, "labels": {"job": "vllm"}},
                {"scrapeUrl": url, "labels": {"job": "node-gateway"}},
            ]
        }
    }
    (spec,) = targets_from_prometheus(payload)
    assert (spec.url, spec.kind, spec.labels) == (url, "vllm", {"job": "vllm"})


def test_prometheus_target_labels_that_are_not_a_mapping_refuse_the_whole_answer() -> None:
    payload = {"data": {"activeTargets": [{"scrapeUrl": "http://h:1/metrics", "labels": "x"}]}}
    with pytest.raises(TargetFileError, match=r"activeTargets\[0\]: 'labels' is not a mapping"):
        targets_from_prometheus(payload)


def test_two_spellings_of_one_url_that_prometheus_jobs_scrape_are_one_target() -> None:
    payload = {
        "data": {
            "activeTargets": [
                {"scrapeUrl": "http://10.0.0.5:8000/metrics", "labels": {"job": "vllm"}},
                {"scrapeUrl": "http://10.0.0.5:8000/metrics/", "labels": {"job": "other"}},
            ]
        }
    }
    (spec,) = targets_from_prometheus(payload)
    assert (spec.url, spec.labels) == ("http://10.0.0.5:8000/metrics", {"job": "vllm"})


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("http://10.0.0.5:8000/metrics", "http://10.0.0.5:8000/metrics"),
        ("HTTP://Vllm-0.Prod:8000/metrics/", "http://vllm-0.prod:8000/metrics"),
        ("http://10.0.0.5:8000//a//./b/../metrics", "http://10.0.0.5:8000/a/metrics"),
        ("http://10.0.0.5/metrics", "http://10.0.0.5:80/metrics"),
        ("https://10.0.0.5:443/metrics", "https://10.0.0.5:443/metrics"),
        ("http://[0:0::1]:9000", "http://[::1]:9000/"),
        ("http://10.0.0.5:8000/metrics?x=%2f", "http://10.0.0.5:8000/metrics?x=%2f"),
        ("http://10.0.0.5:8000/a%2fb/", "http://10.0.0.5:8000/a%2Fb"),
    ],
)
def test_a_target_is_its_url_normalised(url: str, target: str) -> None:
    assert normalised_target(url) == target


def test_instance_names_go_from_host_and_port_to_the_whole_target() -> None:
    assert instance_candidates("http://10.0.0.5:8000/metrics?a=1") == (
        "10.0.0.5:8000",
        "10.0.0.5:8000/metrics?a=1",
        "http://10.0.0.5:8000/metrics?a=1",
    )
