"""The walk on Prometheus: the same verdicts as the manifest from a backfilled history,
and nothing sent but GET to read-only API paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from devtools.prometheus import backfilled_prometheus
from inventory.history import history_import
from inventory.models import Fleet
from inventory.prometheus import READ_ONLY_PATHS
from tests.triage.walk.scenario_walks import history_of, walk_window
from triage.export import evidence_markdown, evidence_pack
from triage.incidents import incident_open, incident_walk_record, incident_walk_run


@pytest.mark.prometheus
@pytest.mark.django_db
def test_a_walk_an_incident_and_its_export_on_prometheus_send_only_read_only_gets(
    tmp_path: Path, settings: Any, requests_seen: list[tuple[str, str]]
) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    history = history_of("gpu-throttle", seed=2)
    path = tmp_path / "fleet.om"
    history.write_openmetrics(path)
    # The inventory (which names each replica exposes) comes from FleetScope's own record.
    history_import(fleet_slug="prom", path=path)
    with backfilled_prometheus(path, tmp_path) as url:
        settings.PROMETHEUS_URL = url
        walk = walk_window(
            Fleet.objects.get(slug="prom"), history.manifest, history, backend="prometheus"
        )
        # An incident keeps the walk and runs one of its own (at "now"), then the export.
        incident = incident_open(fleet=Fleet.objects.get(slug="prom"), title="ITL burning")
        incident_walk_record(incident, walk)
        assert incident_walk_run(incident.pk) is not None
        pack = evidence_markdown(evidence_pack(incident))
    assert "tpot.straggler.gpu_throttle" in pack
    assert walk.backend == "prometheus"
    assert walk.supported == ("tpot.straggler.gpu_throttle",)
    clock = next(
        f for f in walk.node("tpot.straggler.gpu_throttle").figures if f.name == "sm_clock"
    )
    assert "prometheus" in clock.source
    assert requests_seen, "the walk went around the outbound guard"
    assert {method for method, _ in requests_seen} == {"GET"}
    assert {urlsplit(u).path for _, u in requests_seen} <= READ_ONLY_PATHS
    assert {urlsplit(u).netloc for _, u in requests_seen} == {urlsplit(url).netloc}


@pytest.mark.django_db
def test_with_prometheus_down_the_walk_reads_the_embedded_store_and_says_so(
    tmp_path: Path, settings: Any, closed_port: int
) -> None:
    settings.FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK = True
    settings.PROMETHEUS_URL = f"http://127.0.0.1:{closed_port}"
    history = history_of("kv-pressure", seed=1)
    path = tmp_path / "fleet.om"
    history.write_openmetrics(path)
    history_import(fleet_slug="down-prom", path=path)
    walk = walk_window(
        Fleet.objects.get(slug="down-prom"), history.manifest, history, backend="prometheus"
    )
    assert walk.backend == "local"
    assert walk.notes[0].startswith("Prometheus failed (")
    assert "read from the embedded store, which holds the window" in walk.notes[0]
    assert walk.supported == ("ttft.queue.kv_capacity",)
