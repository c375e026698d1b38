"""A history the import refuses (bad lines, a malformed file, one already imported) is
named with its reason, and nothing of it is written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inventory.history import HistoryError, history_import, history_read
from inventory.history import importing as history_module
from tests.inventory.history.histories import ADDED, SMALL, rows


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
