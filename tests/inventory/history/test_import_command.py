"""manage.py import_history: what it loaded, or the line it refused and exit status 2."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.inventory.history.histories import END, SMALL, rows
from tests.inventory.test_commands import run


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
