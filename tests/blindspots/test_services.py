"""Running and storing audits: stored sources plus given paths plus Prometheus' rules, one
transaction per change (a source and the run it caused, or neither), and the overview's
"blind spots new in 24 h"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from blindspots import AuditPaths, audit_fleet, new_blind_spots, source_delete, sources_upload
from blindspots.models import AuditRun, AuditSource
from inventory import scraping
from inventory.models import Fleet
from tests.blindspots.audit_fleets import DASHBOARD, RULES, SCALEDOBJECT, steady_fleet
from tests.inventory.badservers import html_error_page, json_answer, serving

pytestmark = pytest.mark.django_db

RULES_API_ANSWER = {
    "status": "success",
    "data": {
        "groups": [
            {
                "name": "vllm",
                "file": "/etc/prometheus/rules/vllm.yml",
                "rules": [
                    {
                        "type": "alerting",
                        "name": "KvFull",
                        "query": "vllm:gpu_cache_usage_perc > 0.9",
                    },
                    {
                        "type": "recording",
                        "name": "fleet:running",
                        "query": "sum(vllm:num_requests_running)",
                    },
                ],
            }
        ]
    },
}


@pytest.fixture
def steady(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return steady_fleet(tmp_path_factory)


def verdicts(run: AuditRun) -> dict[str, str]:
    return {row["name"]: row["verdict"] for row in run.report["items"]}


def test_an_audit_of_paths_is_stored_as_one_run_with_counts_and_rows(
    steady: Fleet, tmp_path: Path
) -> None:
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "serving.json").write_bytes(DASHBOARD.read_bytes())
    report, run = audit_fleet(steady, paths=AuditPaths(rules=(RULES,), dashboards=(tmp_path,)))
    assert run is not None and AuditRun.objects.filter(fleet=steady).count() == 1
    assert run.counts == report.counts and run.counts["blind"] >= 2
    assert run.report["inputs"] == [str(RULES), str(tmp_path)]
    assert verdicts(run)["KvCacheAlmostFull"] == "blind"
    # The folder was walked: the dashboard's panels are there.
    assert verdicts(run)["Requests running"] == "live"
    assert not run.with_prometheus_rules
    _, unstored = audit_fleet(steady, paths=AuditPaths(rules=(RULES,)), store=False)
    assert unstored is None and AuditRun.objects.count() == 1


def test_an_upload_is_stored_with_its_run_and_bad_ones_are_refused_with_their_reason(
    steady: Fleet,
) -> None:
    outcome = sources_upload(
        steady,
        [
            ("serving.json", DASHBOARD.read_bytes()),
            ("broken.json", b'{"panels": [ {"title": '),
            ("proxy.json", b"<html><body>502 Bad Gateway</body></html>"),
            ("huge.json", b"{" + b" " * (11 * 1024 * 1024) + b"}"),
            ("notes.yml", b"just: some yaml\n"),
        ],
    )
    assert [s.name for s in outcome.stored] == ["serving.json"]
    reasons = dict(outcome.refused)
    assert set(reasons) == {"broken.json", "proxy.json", "huge.json", "notes.yml"}
    assert "JSON" in reasons["broken.json"] or "line" in reasons["broken.json"]
    assert "HTML" in reasons["proxy.json"]
    assert "10 MiB" in reasons["huge.json"]
    source = AuditSource.objects.get(fleet=steady)
    assert source.kind == "dashboard" and source.content == DASHBOARD.read_text()
    assert outcome.run is not None and verdicts(outcome.run)["Requests running"] == "live"
    # The stored source is read again by the next audit, beside the given paths.
    _, run = audit_fleet(steady, paths=AuditPaths(autoscalers=(SCALEDOBJECT,)))
    assert run is not None
    assert run.report["inputs"] == ["upload serving.json", str(SCALEDOBJECT)]
    assert {"Requests running", "vllm-chat"} <= set(verdicts(run))


def test_nothing_is_stored_half_way_when_the_audit_fails(
    steady: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the audit broke")

    monkeypatch.setattr("blindspots.services.run_store", fails)
    with pytest.raises(RuntimeError):
        sources_upload(steady, [("rules.yml", RULES.read_bytes())])
    assert not AuditSource.objects.exists() and not AuditRun.objects.exists()


def test_deleting_a_source_runs_the_audit_again_without_it(steady: Fleet) -> None:
    outcome = sources_upload(steady, [("rules.yml", RULES.read_bytes())])
    (source,) = outcome.stored
    assert source.kind == "rules"
    assert source_delete(steady, source.pk)
    assert not AuditSource.objects.exists()
    latest = AuditRun.objects.filter(fleet=steady).first()
    assert latest is not None and latest.report["items"] == []
    assert not source_delete(steady, source.pk)


def test_prometheus_rules_are_read_with_one_get_and_a_broken_api_is_one_error(
    steady: Fleet,
) -> None:
    seen: list[tuple[str, str]] = []
    scraping.REQUEST_OBSERVERS.append(lambda method, url: seen.append((method, url)))
    try:
        with serving(json_answer(200, RULES_API_ANSWER)) as server:
            with override_settings(PROMETHEUS_URL=server.url("")):
                report, run = audit_fleet(steady, prometheus_rules=True)
            paths = [(method, path.split("?")[0]) for method, path in server.requests]
            assert paths == [("GET", "/api/v1/rules"), ("GET", "/api/v1/query")]
        # This server answers the rules to every path: the names query is a bad answer.
        (names,) = [e for e in report.errors if e.name == "Prometheus metric names"]
        assert "prometheus" in names.reason.lower()
        assert run is not None and run.with_prometheus_rules
        rows = {r.item.name: r for r in report.items}
        assert rows["KvFull"].verdict == "blind"
        assert rows["KvFull"].item.source == "/etc/prometheus/rules/vllm.yml"
        assert rows["fleet:running"].verdict == "live"
        with serving(html_error_page) as server, override_settings(PROMETHEUS_URL=server.url("")):
            report, _ = audit_fleet(steady, paths=AuditPaths(rules=(RULES,)), prometheus_rules=True)
        (error,) = [e for e in report.errors if e.name == "Prometheus rules API"]
        assert error.name == "Prometheus rules API" and "HTML" in error.reason
        assert "<script>" not in error.reason
        assert any(r.item.name == "KvCacheAlmostFull" for r in report.items)  # the rest ran
    finally:
        scraping.REQUEST_OBSERVERS.pop()
    read_only = ("/api/v1/rules", "/api/v1/query")
    assert seen and all(
        method == "GET" and any(p in url for p in read_only) for method, url in seen
    )


def stored_run(fleet: Fleet, at: datetime, rows: dict[str, str]) -> AuditRun:
    items = [
        {"key": f"rule\x1ff\x1fw\x1f{name}", "name": name, "verdict": verdict}
        for name, verdict in rows.items()
    ]
    return AuditRun.objects.create(
        fleet=fleet,
        started_at=at,
        finished_at=at,
        report={"items": items},
        live_keys=[i["key"] for i in items if i["verdict"] == "live"],
        not_live_keys=[i["key"] for i in items if i["verdict"] != "live"],
    )


def test_new_blind_spots_are_items_live_earlier_in_the_last_24_hours_and_not_now() -> None:
    fleet = Fleet.objects.create(slug="runs", name="Runs")
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    assert new_blind_spots(fleet, now=now) == []
    stored_run(fleet, now - timedelta(hours=30), {"old": "live"})
    stored_run(fleet, now - timedelta(hours=5), {"a": "live", "b": "live", "c": "blind"})
    stored_run(
        fleet,
        now - timedelta(hours=1),
        {"a": "live", "b": "partly blind", "c": "blind", "old": "blind", "d": "blind"},
    )
    assert [r["name"] for r in new_blind_spots(fleet, now=now)] == ["b"]
    # A day later the earlier runs are out of the window: nothing is new any more.
    assert new_blind_spots(fleet, now=now + timedelta(hours=24)) == []
