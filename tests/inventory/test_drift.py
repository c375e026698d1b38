from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from inventory.drift import EndpointSnapshot, Finding, fleet_findings
from inventory.report import deprecated_replacement
from inventory.summary import FamilySummary

NOW = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def fam(type: str = "gauge", series: int = 1, buckets: list[float] | None = None) -> FamilySummary:
    return {
        "type": type,
        "help": "",
        "unit": "",
        "label_names": ["engine", "model_name"],
        "series": series,
        "buckets": buckets,
        "problems": [],
    }


def snap(url: str, families: dict[str, FamilySummary] | None, **changes: Any) -> EndpointSnapshot:
    healthy = EndpointSnapshot(
        endpoint_id=0,
        url=url,
        kind="vllm",
        dialect="current",
        families=families,
        last_run_at=NOW - timedelta(seconds=5),
        last_run_ok=True,
        last_error="",
        last_success_at=NOW - timedelta(seconds=5),
    )
    return replace(healthy, **changes)


def findings(*snaps: EndpointSnapshot) -> list[Finding]:
    return fleet_findings(snaps, now=NOW, interval_seconds=15, deprecated=deprecated_replacement)


def codes(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.code, f.family) for f in found]


def test_identical_replicas_have_no_findings() -> None:
    families = {"vllm:kv_cache_usage_perc": fam()}
    assert findings(snap("http://a", families), snap("http://b", families)) == []


def test_metric_missing_on_some_replicas_names_them() -> None:
    (finding,) = findings(
        snap("http://a", {"vllm:kv_cache_usage_perc": fam()}),
        snap("http://b", {}),
    )
    assert finding.code == "missing-on-some"
    assert finding.endpoints == ("http://b",)
    assert finding.message == "exposed by 1 of 2 vllm endpoints"


def test_different_bucket_edges_are_flagged_with_their_last_edge() -> None:
    ttft = "vllm:request_prompt_tokens"
    found = findings(
        snap("http://a", {ttft: fam("histogram", buckets=[1, 2, 5, 2000])}),
        snap("http://b", {ttft: fam("histogram", buckets=[1, 2, 5, 20000])}),
    )
    (finding,) = [f for f in found if f.code == "buckets-differ"]
    assert "last edge 2000 on 1" in finding.message and "last edge 20000 on 1" in finding.message


def test_type_that_differs_is_critical() -> None:
    found = findings(
        snap("http://a", {"DCGM_FI_PROF_PCIE_TX_BYTES": fam("counter")}),
        snap("http://b", {"DCGM_FI_PROF_PCIE_TX_BYTES": fam("gauge")}),
    )
    assert found[0].code == "type-differs"
    assert found[0].severity == "critical"


def test_mixed_dialects_point_at_the_minority() -> None:
    families = {"vllm:num_requests_running": fam()}
    found = findings(
        snap("http://a", families),
        snap("http://b", families),
        snap("http://c", families, dialect="v1-0.8"),
    )
    (skew,) = [f for f in found if f.code == "mixed-dialects"]
    assert skew.endpoints == ("http://c",)


def test_deprecated_names_still_exposed_say_what_replaces_them() -> None:
    found = findings(snap("http://a", {"vllm:gpu_cache_usage_perc": fam()}))
    (finding,) = [f for f in found if f.code == "deprecated-name"]
    assert finding.message == "deprecated name still exposed; use vllm:kv_cache_usage_perc"


def test_down_and_stale_endpoints_are_reported_with_the_reason() -> None:
    found = findings(
        snap("http://a", None, last_run_ok=False, last_error="connection refused"),
        snap("http://b", {}, last_success_at=NOW - timedelta(minutes=5)),
        snap("http://c", None, last_run_at=None, last_run_ok=None, last_success_at=None),
    )
    by_code = {f.code: f for f in found}
    assert by_code["down"].message == "last scrape failed: connection refused"
    assert by_code["down"].severity == "critical"
    assert by_code["stale"].message == "last good scrape 300s ago"
    assert by_code["never-scraped"].endpoints == ("http://c",)


def test_cardinality_outlier_is_flagged_against_the_fleet_median() -> None:
    normal = {"vllm:lora_requests_info": fam(series=3)}
    heavy = {"vllm:lora_requests_info": fam(series=5000)}
    found = findings(snap("http://a", normal), snap("http://b", normal), snap("http://c", heavy))
    (finding,) = [f for f in found if f.code == "cardinality-outlier"]
    assert finding.endpoints == ("http://c",)
    assert finding.message == "5000 series against a fleet median of 3"


def test_family_problems_from_the_parser_become_findings() -> None:
    broken = fam("histogram")
    broken["problems"] = ["no +Inf bucket"]
    (finding,) = findings(snap("http://a", {"vllm:e2e_request_latency_seconds": broken}))
    assert (finding.code, finding.message) == ("family-problem", "no +Inf bucket")
