"""Importing a recorded history: fleetsim history -> import_history -> the store, as live
scrapes would have left it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from fleetsim.api import sample_exposition
from fleetsim.families import Family as SimFamily
from fleetsim.families import escape, format_value
from fleetsim.history import History
from inventory.exposition import parse
from inventory.history import UP_DOWN_REASON, HistoryError, history_import, history_read
from inventory.history import importing as history_module
from inventory.models import Endpoint, EndpointInventory, Fleet, ScrapeRun, ScrapeStatus
from inventory.snapshot import inventory_snapshot
from inventory.store import frames_in_window

# A fixed end, so every run (and a second History for the truth) has the same grid.
END = 1_794_999_990.0  # on the 15 s grid, as History keeps it
STEP = 15.0
DOWN = {"replicas": 2, "scenario": "replica-down", "hours": 0.25, "at": 300.0, "duration": 240.0}
RESTART = {"replicas": 2, "scenario": "cold-restart", "hours": 0.5, "at": 300.0, "duration": 600.0}

OM_TYPES = ("counter", "gauge", "histogram", "summary")
Truth = dict[tuple[str, float], dict[tuple[str, frozenset[tuple[str, str]]], float] | None]


def truth(options: dict[str, Any], **more: Any) -> Truth:
    """What each target served at each step: {(instance, unix): {(name, labels): value}}
    without `_created` (the store skips it), or None when it was down."""
    history = History(**options, end=END, step=STEP, **more)
    out: Truth = {}
    for unix, scrapes in history.scrapes():
        for target, families in scrapes:
            out[(target.instance, unix)] = (
                None
                if families is None
                else {
                    (fam.name + suffix, frozenset(labels)): float(format_value(value))
                    for fam in families
                    for suffix, labels, value in fam.samples
                    if suffix != "_created"
                }
            )
    return out


def write(path: Path, options: dict[str, Any], **more: Any) -> Path:
    History(**options, end=END, step=STEP, **more).write_openmetrics(path)
    return path


@pytest.fixture(scope="module")
def down_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("down") / "down.om", DOWN)


@pytest.fixture(scope="module")
def restart_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("restart") / "restart.om", RESTART)


def stored(
    fleet: Fleet,
) -> dict[tuple[str, float], dict[tuple[str, frozenset[tuple[str, str]]], float]]:
    """Every stored frame of the fleet: {(instance, unix): {(name, labels): value}}."""
    endpoints = {e.pk: e.instance for e in Endpoint.objects.filter(fleet=fleet)}
    start, end = datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
    return {
        (endpoints[frame.endpoint_id], frame.at.timestamp()): {
            (name, frozenset(labels.items())): value
            for (name, labels), value in zip(frame.layout, frame.values, strict=True)
        }
        for frame in frames_in_window(endpoint_ids=list(endpoints), start=start, end=end)
    }


def rows() -> tuple[int, ...]:
    """Every row an import writes, counted through the models and the store's face."""
    ids = list(Endpoint.objects.values_list("pk", flat=True))
    start, end = datetime(1970, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
    frames = sum(1 for _ in frames_in_window(endpoint_ids=ids, start=start, end=end))
    return (
        Fleet.objects.count(),
        Endpoint.objects.count(),
        ScrapeRun.objects.count(),
        EndpointInventory.objects.count(),
        frames,
    )


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def assert_stored_as_served(fleet: Fleet, expected: Truth) -> None:
    got = stored(fleet)
    served = {key: samples for key, samples in expected.items() if samples is not None}
    assert got.keys() == served.keys()
    for key, samples in served.items():
        frame = got[key]
        assert frame.keys() == samples.keys(), key
        assert all(same(frame[s], samples[s]) for s in samples), key


# What the import leaves: frames, failed scrapes, counter resets, inventories.


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
    inventories = dict(
        EndpointInventory.objects.filter(
            endpoint__fleet=report.fleet, endpoint__kind="vllm"
        ).values_list("endpoint__url", "dialect")
    )
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
    dialects = dict(
        EndpointInventory.objects.filter(
            endpoint__fleet=report.fleet, endpoint__kind="vllm"
        ).values_list("endpoint__url", "dialect")
    )
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


# Prometheus' own labels and series.

ADDED = 'instance="127.0.0.1:18500",job="vllm",zone="a"'
SMALL = f"""# TYPE up gauge
up{{{ADDED}}} 1 1000
up{{{ADDED}}} 0 1015
up{{{ADDED}}} 1 1030
# TYPE scrape_duration_seconds gauge
scrape_duration_seconds{{{ADDED}}} 0.25 1000
scrape_duration_seconds{{{ADDED}}} 10 1015
scrape_duration_seconds{{{ADDED}}} 0.5 1030
# TYPE vllm:num_requests_running gauge
# HELP vllm:num_requests_running Number of requests in "model execution" batches.
vllm:num_requests_running{{model_name="m",{ADDED}}} 3 1000
vllm:num_requests_running{{model_name="m",{ADDED}}} 4 1030
# TYPE jobs counter
# HELP jobs Jobs done.
jobs_total{{exported_job="batch",{ADDED}}} 5 1000
jobs_created{{exported_job="batch",{ADDED}}} 900 1000
jobs_total{{exported_job="batch",{ADDED}}} 1 1030
jobs_created{{exported_job="batch",{ADDED}}} 1020 1030
# EOF
"""


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


# Bad input: a specific message, and nothing written.


def corrupt(source: Path, dest: Path, lineno: int, change: Any) -> Path:
    with source.open() as src, dest.open("w") as out:
        for number, line in enumerate(src, 1):
            out.write(change(line) if number == lineno else line)
    return dest


def sample_line(path: Path, prefix: str) -> int:
    with path.open() as src:
        return next(n for n, line in enumerate(src, 1) if line.startswith(prefix))


@pytest.fixture
def one_fleet_already(down_file: Path) -> Iterator[tuple[int, ...]]:
    history_import(fleet_slug="before", path=down_file)
    yield rows()


BAD_LINES = [
    pytest.param(
        lambda line: line.replace(" ", " 1_0", 1),
        "invalid value",
        id="bad-value",
    ),
    pytest.param(
        lambda line: line.replace('model_name="', "model_name=", 1),
        "label",
        id="bad-labels",
    ),
    pytest.param(
        lambda line: line.rsplit(" ", 1)[0] + "\n",
        "needs its timestamp",
        id="no-timestamp",
    ),
    pytest.param(
        lambda line: line.replace('instance="', 'host="', 1),
        "has no instance label",
        id="no-instance",
    ),
    pytest.param(lambda line: line.replace("\n", "\r\n"), "carriage return", id="crlf"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), BAD_LINES)
def test_a_bad_line_is_named_and_nothing_is_written(
    down_file: Path, tmp_path: Path, one_fleet_already: tuple[int, ...], change: Any, message: str
) -> None:
    # Late in the file, so a streaming import would have written most of it by then.
    with down_file.open() as src:
        lineno = max(
            n for n, line in enumerate(src, 1) if line.startswith("vllm:num_requests_running{")
        )
    bad = corrupt(down_file, tmp_path / "bad.om", lineno, change)
    with pytest.raises(HistoryError) as caught:
        history_import(fleet_slug="after", path=bad)
    assert caught.value.line == lineno
    assert str(caught.value).startswith(f"line {lineno}: ")
    assert message in str(caught.value)
    assert rows() == one_fleet_already


@pytest.mark.django_db
def test_a_sample_line_the_scrape_parser_refuses_is_named_by_its_line_in_the_file(
    down_file: Path, tmp_path: Path, one_fleet_already: tuple[int, ...]
) -> None:
    """A fault only the rebuilt scrape shows (a label name reserved for Prometheus)."""
    lineno = sample_line(down_file, "vllm:e2e_request_latency_seconds_count{")
    bad = corrupt(
        down_file, tmp_path / "bad.om", lineno, lambda line: line.replace("model_name=", "__m=")
    )
    with pytest.raises(HistoryError) as caught:
        history_import(fleet_slug="after", path=bad)
    assert caught.value.line == lineno
    assert "in the scrape of '127.0.0.1:18000'" in str(caught.value)
    assert rows() == one_fleet_already


@pytest.mark.django_db
def test_a_failure_while_writing_rolls_the_whole_history_back(
    down_file: Path, one_fleet_already: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = history_module.cycle_record

    def failing(fleet_id: int, results: list[Any]) -> Any:
        calls.append(fleet_id)
        if len(calls) == 10:
            raise RuntimeError("disk full")
        return real(fleet_id, results)

    monkeypatch.setattr(history_module, "cycle_record", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        history_import(fleet_slug="after", path=down_file)
    assert rows() == one_fleet_already


@pytest.mark.django_db
def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"cannot read .*nowhere\.om: No such file"):
        history_import(fleet_slug="x", path=tmp_path / "nowhere.om")
    assert rows() == (0, 0, 0, 0, 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "line 1: missing '# EOF'"),
        (SMALL.replace("# EOF\n", ""), "missing '# EOF'"),
        (SMALL + "up 1 1\n", "text after '# EOF'"),
        (SMALL.replace("# TYPE jobs counter", "# TYPE jobs countr"), "unknown metric type"),
        (SMALL.replace("# TYPE up gauge\n", "# TYPE up gauge\n\n"), "line 2: blank line"),
        (SMALL.replace(f"up{{{ADDED}}} 1 1000\n", ""), "line 10: instance '127.0.0.1:18500' has"),
        (SMALL.replace(" 0 1015", " 2 1015"), "line 3: up must be 0 or 1"),
        (
            SMALL.replace("# TYPE up gauge\n", "").replace("up{", "upp{"),
            "has no up series",
        ),
        (SMALL, None),
    ],
)
def test_a_malformed_history_is_refused_with_the_reason(
    tmp_path: Path, text: str, message: str | None
) -> None:
    path = tmp_path / "h.om"
    path.write_text(text)
    if message is None:
        history_read(path)
        return
    with pytest.raises(HistoryError) as caught:
        history_read(path)
    assert message in str(caught.value)


# Re-importing: refused.


@pytest.mark.django_db
def test_importing_the_same_history_again_is_refused_and_writes_nothing(
    down_file: Path, one_fleet_already: tuple[int, ...]
) -> None:
    with pytest.raises(HistoryError, match="already holds scrapes of 6 of this history's targets"):
        history_import(fleet_slug="before", path=down_file)
    assert rows() == one_fleet_already
    # Another fleet, or another time in the same fleet, is fine.
    history_import(fleet_slug="again", path=down_file)


# The command.


def run(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_the_command_loads_a_history_and_says_what_it_loaded(down_file: Path) -> None:
    code, out, err = run("import_history", str(down_file), "--fleet", "incident")
    assert (code, err) == (0, "")
    assert "fleet incident: 6 endpoints added, 0 updated; 61 cycles from" in out
    assert "failed (up=0)" in out
    end = datetime.fromtimestamp(END, UTC)
    assert f"view it: /fleets/incident/?since=15m&end={end:%Y-%m-%dT%H:%M:%SZ}" in out
    assert "go at the next store prune" in out  # END is long past


@pytest.mark.django_db
def test_the_command_names_the_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "h.om"
    path.write_text(SMALL.replace(" 4 1030", " four 1030"))
    code, out, err = run("import_history", str(path), "--fleet", "x")
    assert code == 2 and out == ""
    assert err.strip() == f"{path}: line 12: invalid value 'four'"
    assert rows() == (0, 0, 0, 0, 0)
    code, _, err = run("import_history", str(tmp_path / "none.om"), "--fleet", "x")
    assert code == 2 and "No such file or directory" in err
