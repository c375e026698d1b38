from __future__ import annotations

import pytest

from triage.models import Runbook
from triage.runbooks import runbooks_seed


@pytest.fixture(autouse=True)
def _runbooks_seeded(request: pytest.FixtureRequest) -> None:
    """The leaf runbooks the data migration seeds. A transactional test anywhere on the
    same worker (a browser test) flushes every table when it ends, the migration's rows
    with them, so a test that reads the database gets them back the migration's way."""
    marker = request.node.get_closest_marker("django_db")
    wants_db = "db" in request.fixturenames or marker is not None
    if not wants_db or (marker is not None and marker.kwargs.get("transaction")):
        return
    request.getfixturevalue("db")
    runbooks_seed(Runbook)
