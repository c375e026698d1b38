"""The recorded histories the import tests share, written once per worker: a file's module
fixtures would write the same 20-50 MB history again for every test file that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inventory.history.histories import DOWN, RESTART, write


@pytest.fixture(scope="session")
def down_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("down") / "down.om", DOWN)


@pytest.fixture(scope="session")
def restart_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("restart") / "restart.om", RESTART)
