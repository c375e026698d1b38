"""What importing a recorded history leaves: frames as live scrapes would have stored them,
failed scrapes where up was 0, counter resets, and each endpoint's inventory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleetsim.api import sample_exposition
from fleetsim.families import Family as SimFamily
from fleetsim.families import escape, format_value
from fleetsim.history import History
from inventory.exposition import parse
from inventory.history import UP_DOWN_REASON, history_import, history_read
from inventory.models import Endpoint, EndpointInventory, Fleet, ScrapeRun, ScrapeStatus
from inventory.snapshot import inventory_snapshot
from tests.inventory.history.histories import (
    DOWN,
    END,
    RESTART,
    SMALL,
    STEP,
    assert_stored_as_served,
    stored,
    truth,
    write,
)

OM_TYPES = ("counter", "gauge", "histogram", "summary")


def vllm_dialects(fleet: Fleet) -> dict[str, str]:
    """The dialect each vLLM endpoint's inventory was detected in, by URL."""
    return dict(
        EndpointInventory.objects.filter(endpoint__fleet=fleet, endpoint__kind="vllm").values_list(
            "endpoint__url", "dialect"
        )
    )


@pytest.mark.django_db
def test_a_replica_down_history_imports_with_failed_scrapes_where_up_was_0(
    down_file: Path,
) -> None:
    expected = truth(DOWN)
    report = history_import(fleet_slug="down", path=down_file)
    down = {key for key, samples in expected.items() if samples is None}
    assert down, "the scenario takes a replica down"
    assert report.failed == len(down)
    assert report.scrapes == len(expected)
    failed = ScrapeRun.objects.filter(endpoint__fleet=report.fleet, status=ScrapeStatus.FAILED)
    assert {(run.endpoint.instance, run.started_at.timestamp()) for run in failed} == down
    assert {run.error for run in failed} == {UP_DOWN_REASON}
    assert ScrapeRun.objects.filter(status=ScrapeStatus.SUCCEEDED).count() == len(expected) - len(
        down
    )
    # Every value as served, and nothing stored where the replica was down.
    assert_stored_as_served(report.fleet, expected)
    # Registered as import_targets would from the same file_sd labels.
    kinds = dict(Endpoint.objects.filter(fleet=report.fleet).values_list("url", "kind"))
    assert sorted(kinds.values()) == ["dcgm", "dcgm", "gateway", "prober", "vllm", "vllm"]
    vllm = Endpoint.objects.get(fleet=report.fleet, url="http://127.0.0.1:18000/metrics")
    assert vllm.labels["job"] == "vllm" and vllm.labels["pod"].startswith("vllm-")


@pytest.mark.django_db
def test_a_restart_keeps_its_counter_reset_as_it_happened(restart_file: Path) -> None:
    expected = truth(RESTART)
    report = history_import(fleet_slug="restart", path=restart_file)
    assert_stored_as_served(report.fleet, expected)
    got = stored(report.fleet)
    name = "vllm:generation_tokens_total"
    resets = 0
    for instance in ("127.0.0.1:18000", "127.0.0.1:18001"):
        series = sorted(
            (unix, value)
            for (where, unix), samples in got.items()
            if where == instance
            for (sample, _), value in samples.items()
            if sample == name
        )
        values = [value for _, value in series]
        resets += sum(b < a for a, b in zip(values, values[1:], strict=False))
    assert resets >= 1, "the restart's counter reset is stored as it happened"


@pytest.mark.django_db
@pytest.mark.parametrize("dialect", ["v0", "v1-0.8", "v1-0.10"])
def test_an_older_dialect_imports_with_the_inventory_a_live_scrape_gives(
    tmp_path: Path, dialect: str
) -> None:
    options = {"replicas": 1, "scenario": "steady", "hours": 0.05, "dialect": dialect}
    report = history_import(fleet_slug="old", path=write(tmp_path / "old.om", options))
    inventory = EndpointInventory.objects.get(endpoint__fleet=report.fleet, endpoint__kind="vllm")
    live = inventory_snapshot(parse(sample_exposition(dialect=dialect)))
    assert inventory.dialect == live.dialect == dialect
    assert inventory.detected_kind == live.kind
    # Types, help and buckets as the endpoint's own text says. (A family declared without
    # samples leaves nothing in a history: Prometheus keeps samples, not declarations.)
    shown = {name for name, family in live.families.items() if family["series"]}
    assert shown <= inventory.families.keys()
    for name in shown:
        family = live.families[name]
        assert inventory.families[name]["type"] == family["type"], name
        assert inventory.families[name]["help"] == family["help"], name
        if family["buckets"] is not None:
            assert inventory.families[name]["buckets"] == family["buckets"], name


@pytest.mark.django_db
def test_a_replica_rolled_back_mid_history_ends_with_the_older_dialects_inventory(
    tmp_path: Path,
) -> None:
    options = {"replicas": 2, "scenario": "version-skew", "hours": 0.25, "at": 200.0}
    path = write(tmp_path / "skew.om", options, duration=3600.0)
    expected = truth(options, duration=3600.0)
    report = history_import(fleet_slug="skew", path=path)
    assert_stored_as_served(report.fleet, expected)
    inventories = vllm_dialects(report.fleet)
    # The rolled-back replica runs the next older vLLM from its restart on.
    assert inventories == {
        "http://127.0.0.1:18000/metrics": "v1-0.10",
        "http://127.0.0.1:18001/metrics": "current",
    }
    skewed = EndpointInventory.objects.get(endpoint__url="http://127.0.0.1:18000/metrics")
    assert skewed.scraped_at.timestamp() > END - 0.25 * 3600 + 200.0


@pytest.mark.django_db
def test_a_mixed_fleet_in_one_file_gets_each_endpoint_its_own_dialect(tmp_path: Path) -> None:
    """Two fleets of different vLLM versions merged into one file, series by series (the
    order Prometheus dumps its blocks in) rather than scrape by scrape."""
    options: dict[str, Any] = {"replicas": 1, "scenario": "steady", "hours": 0.05}
    path = merged(
        tmp_path / "mixed.om",
        [
            # One file has one HELP per family: the first fleet's (V0's wording of
            # num_requests_running would count as evidence against the current replica).
            History(**options, dialect="current", base_port=18100, end=END, step=STEP),
            History(**options, dialect="v0", base_port=18000, end=END, step=STEP),
        ],
    )
    report = history_import(fleet_slug="mixed", path=path)
    dialects = vllm_dialects(report.fleet)
    assert dialects == {
        "http://127.0.0.1:18000/metrics": "v0",
        "http://127.0.0.1:18100/metrics": "current",
    }


def merged(path: Path, histories: list[History]) -> Path:
    """The histories in one OpenMetrics file, each series' samples contiguous."""
    families: dict[str, tuple[str, str, dict[str, list[str]]]] = {}
    for history in histories:
        for unix, scrapes in history.scrapes():
            ts = format_value(unix)
            for target, fams in scrapes:
                added = [("instance", target.instance), *sorted(target.labels.items())]
                up = SimFamily("up", "gauge", "up")
                up.add((), 0.0 if fams is None else 1.0)
                for fam in [up, *(fams or ())]:
                    name = fam.name
                    om_type = fam.type if fam.type in OM_TYPES else "unknown"
                    entry = families.setdefault(name, (om_type, fam.help, {}))
                    assert entry[0] == om_type, f"{name} is a {entry[0]} and a {om_type}"
                    samples = fam.samples
                    for suffix, labels, value in samples:
                        text = ",".join(f'{k}="{escape(v)}"' for k, v in (*labels, *added))
                        entry[2].setdefault(f"{name}{suffix}{{{text}}}", []).append(
                            f"{format_value(value)} {ts}"
                        )
    with path.open("w") as out:
        for name, (type_, help_, series) in families.items():
            out.write(f"# TYPE {name} {type_}\n# HELP {name} {escape(help_)}\n")
            for text, points in series.items():
                out.writelines(f"{text} {point}\n" for point in points)
        out.write("# EOF\n")
    return path


def test_the_layout_shortcut_stores_what_parsing_every_scrape_stores(restart_file: Path) -> None:
    fast = history_read(restart_file)
    full = history_read(restart_file, parse_every_scrape=True)
    assert full.parses == full.scrapes - full.failed
    assert fast.parses < full.parses / 10
    assert len(fast.cycles) == len(full.cycles)
    for a, b in zip(fast.cycles, full.cycles, strict=True):
        assert a.at == b.at
        for (url_a, one), (url_b, other) in zip(a.scrapes, b.scrapes, strict=True):
            assert url_a == url_b
            assert one.frame == other.frame
            assert one.inventory == other.inventory
            assert (one.error is None) == (other.error is None)


@pytest.mark.django_db
def test_the_labels_prometheus_added_come_off_and_its_own_series_stay_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "small.om"
    path.write_text(SMALL)
    report = history_import(fleet_slug="small", path=path)
    endpoint = Endpoint.objects.get(fleet=report.fleet)
    assert endpoint.url == "http://127.0.0.1:18500/metrics"
    assert endpoint.labels == {"instance": "127.0.0.1:18500", "job": "vllm", "zone": "a"}
    assert stored(report.fleet) == {
        ("127.0.0.1:18500", 1000.0): {
            ("vllm:num_requests_running", frozenset({("model_name", "m")})): 3.0,
            ("jobs_total", frozenset({("job", "batch")})): 5.0,
        },
        ("127.0.0.1:18500", 1030.0): {
            ("vllm:num_requests_running", frozenset({("model_name", "m")})): 4.0,
            ("jobs_total", frozenset({("job", "batch")})): 1.0,
        },
    }
    runs = list(ScrapeRun.objects.order_by("started_at").values_list("status", "duration_seconds"))
    assert runs == [("succeeded", 0.25), ("failed", 10.0), ("succeeded", 0.5)]
    families = EndpointInventory.objects.get(endpoint=endpoint).families
    assert families["jobs"]["type"] == "counter"
    assert families["jobs"]["label_names"] == ["job"]
    assert families["vllm:num_requests_running"]["help"] == (
        'Number of requests in "model execution" batches.'
    )
