"""What Prometheus has seen lately counts as exposure: a real Prometheus holding a series
no endpoint of the fleet exposes (written the way its scrape loop writes, through remote
write) keeps a rule on that series live, and names are listed as the reference client
lists them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings
from prometheus_api_client import PrometheusConnect

from blindspots.prometheus import names_from_prometheus
from devtools.prometheus import running_remote_write_prometheus
from devtools.remote_write import TimeSeries, remote_write
from tests.blindspots.audit_fleets import steady_fleet

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]

SEEN = "team:requests_per_second:rate5m"
OLD = "team:ancient_metric"


def series(name: str, minutes_ago: float) -> TimeSeries:
    at = int((time.time() - minutes_ago * 60) * 1000)
    return TimeSeries((("__name__", name), ("job", "recorder")), ((1.0, at),))


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_remote_write_prometheus(tmp_path_factory.mktemp("names")) as url:
        remote_write(url, [series(SEEN, 1), series(OLD, 30)])
        yield url


def test_names_are_those_with_a_sample_in_the_last_five_minutes(prometheus: str) -> None:
    names, errors = names_from_prometheus([SEEN, OLD, "never:written"], prometheus)
    assert errors == [] and names == frozenset({SEEN})
    # The reference client lists every name Prometheus holds, the stale one too.
    listed = set(PrometheusConnect(url=prometheus, timeout=10).all_metrics())
    assert {SEEN, OLD} <= listed


def test_a_prometheus_that_cannot_answer_is_one_error(closed_port: int) -> None:
    names, errors = names_from_prometheus([SEEN], f"http://127.0.0.1:{closed_port}")
    assert names is None
    (error,) = errors
    assert error.name == "Prometheus metric names" and error.reason


def test_a_rule_on_a_series_prometheus_sees_is_live_and_one_it_does_not_is_blind(
    prometheus: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from blindspots import AuditPaths, audit_fleet

    fleet = steady_fleet(tmp_path_factory)
    rules = tmp_path_factory.mktemp("rules") / "team.yml"
    rules.write_text(
        "groups:\n- name: team\n  rules:\n"
        f"  - alert: SeenHigh\n    expr: {SEEN} > 100\n"
        f"  - alert: OldHigh\n    expr: {OLD} > 100\n"
    )
    with override_settings(PROMETHEUS_URL=prometheus):
        report, _ = audit_fleet(
            fleet, paths=AuditPaths(rules=(rules,)), prometheus_rules=True, store=False
        )
    verdicts = {r.item.name: r.verdict for r in report.items}
    assert verdicts["SeenHigh"] == "live"
    assert verdicts["OldHigh"] in ("blind", "never matched")
    assert "Prometheus metric names" in report.inputs
