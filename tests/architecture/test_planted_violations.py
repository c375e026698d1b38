"""Each rule, on a synthetic tree with one planted violation among allowed imports: a rule
that stops catching fails here, not silently on the real tree."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.architecture.rules import (
    faced_packages_entered_past_their_face,
    fleetsim_imports_of_django_or_the_project,
    inventory_imports_of_page_apps_or_queries,
    names_faces_list_but_lack,
    private_names_imported,
    queries_imports_of_page_apps,
    store_internals_reached_from_outside,
    tools_or_tests_imported_out_of_place,
    unexplained_type_ignores,
)
from tests.architecture.scan import Tree, within

PLANTED = [
    pytest.param(
        inventory_imports_of_page_apps_or_queries,
        {
            "inventory/__init__.py": "",
            "inventory/services.py": (
                "from typing import TYPE_CHECKING\n"
                "from inventory.catalog import resolve\n"
                "if TYPE_CHECKING:\n"
                "    from dashboard.panels import Panel\n"
            ),
            "dashboard/panels.py": "from queries import run_query\nimport inventory\n",
            "tests/inventory/test_services.py": "from queries import run_query\n",
        },
        ["inventory/services.py:4: from dashboard.panels import Panel"],
        id="inventory-under-type-checking",
    ),
    pytest.param(
        queries_imports_of_page_apps,
        {
            "queries/run.py": (
                "from inventory.store import StoreWindow\n"
                "def render():\n"
                "    from slo.views import page\n"
            ),
            "slo/views.py": "from queries import run_query\n",
        },
        ["queries/run.py:3: from slo.views import page"],
        id="queries-inside-a-function",
    ),
    pytest.param(
        fleetsim_imports_of_django_or_the_project,
        {
            "fleetsim/server.py": "import numpy\nimport fleetsim.engine\nimport channels.layers\n",
            "fleetsim/engine.py": "",
            "benchmarks/fleetsim.py": "import django\nfrom fleetsim.api import start\n",
        },
        ["fleetsim/server.py:3: import channels.layers"],
        id="fleetsim-django",
    ),
    pytest.param(
        fleetsim_imports_of_django_or_the_project,
        {
            "fleetsim/cli.py": "from .engine import run\nfrom .. import inventory\n",
            "fleetsim/engine.py": "",
            "inventory/__init__.py": "",
        },
        ["fleetsim/cli.py:2: from .. import inventory"],
        id="fleetsim-project",
    ),
    pytest.param(
        store_internals_reached_from_outside,
        {
            "inventory/models.py": "",
            "inventory/store/__init__.py": "from inventory.store.encoding import frame_encode\n",
            "inventory/store/encoding.py": "",
            "inventory/store/reads.py": "from inventory.models import SampleFrame, SeriesSet\n",
            "dashboard/views.py": (
                "from inventory.store import StoreWindow\n"
                "from inventory.store.encoding import frame_encode\n"
                "from inventory.models import Fleet, SampleFrame\n"
            ),
            "tests/inventory/store/test_reads.py": "from inventory.models import SeriesSet\n",
        },
        ["dashboard/views.py:3: from inventory.models import SampleFrame"],
        id="store-frames",
    ),
    pytest.param(
        store_internals_reached_from_outside,
        {
            "inventory/store/__init__.py": "",
            "inventory/store/chunks.py": "",
            "inventory/store/reads.py": "from inventory.store import chunks\n",
            "queries/local/backend.py": "from inventory.store import SeriesChunk, chunks\n",
            "tests/inventory/store/test_chunks.py": "import inventory.store.chunks\n",
        },
        ["queries/local/backend.py:1: from inventory.store import chunks"],
        id="store-inner-module",
    ),
    pytest.param(
        faced_packages_entered_past_their_face,
        {
            "queries/__init__.py": "from queries.run import run_query\n",
            "queries/run.py": "from queries.local import run_local\n",
            "queries/local/__init__.py": "from queries.local.backend import run_local\n",
            "queries/local/backend.py": "from queries.local.functions import rate\n",
            "queries/local/functions.py": "",
            "inventory/store/encoding.py": "",
            "dashboard/panels.py": (
                "from queries import run_query\n"
                "from inventory.store.encoding import frame_encode\n"
                "from queries.local.backend import run_local\n"
            ),
        },
        [
            "dashboard/panels.py:3: from queries.local.backend import run_local"
            "  (from outside queries.local: use its face)"
        ],
        id="faces-production",
    ),
    pytest.param(
        faced_packages_entered_past_their_face,
        {
            "queries/promql/__init__.py": "",
            "queries/promql/text.py": "",
            "inventory/exposition/lexer.py": "",
            "tests/queries/promql/test_text.py": "from queries.promql.text import quote\n",
            "tests/inventory/exposition/test_lexer.py": "import inventory.exposition.lexer\n",
            "tests/queries/test_run.py": "from queries.promql import text\n",
        },
        [
            "tests/queries/test_run.py:1: from queries.promql import text"
            "  (from outside queries.promql: use its face)"
        ],
        id="faces-tests",
    ),
    pytest.param(
        faced_packages_entered_past_their_face,
        {
            "queries/__init__.py": '__all__ = ["run_query"]\nfrom queries.run import run_query\n',
            "queries/run.py": "MAX = 8\n",
            "benchmarks/overview.py": "from queries import run_query\nfrom queries import MAX\n",
        },
        ["benchmarks/overview.py:2: from queries import MAX  (queries.__all__ does not list MAX)"],
        id="faces-unlisted-name",
    ),
    pytest.param(
        private_names_imported,
        {
            "queries/promql/backend.py": "from __future__ import annotations\n",
            "tests/queries/promql/test_backend.py": (
                "from queries.promql.backend import points\n"
                "from queries import __doc__\n"
                "from queries.promql.backend import _points as points_of\n"
            ),
        },
        [
            "tests/queries/promql/test_backend.py:3:"
            " from queries.promql.backend import _points as points_of"
        ],
        id="private-name",
    ),
    pytest.param(
        tools_or_tests_imported_out_of_place,
        {
            "benchmarks/overview.py": (
                "from devtools.ports import free_port\nfrom tests.queries.storefill import fill\n"
            ),
            "tests/conftest.py": "from devtools.waiting import wait_until\n",
        },
        ["benchmarks/overview.py:2: from tests.queries.storefill import fill"],
        id="tools-import-tests",
    ),
    pytest.param(
        tools_or_tests_imported_out_of_place,
        {
            "devtools/waiting.py": "",
            "inventory/heartbeat.py": (
                "import importlib\n"
                "from fleetscope.lib.lru import LruCache\n"
                "waiting = importlib.import_module('devtools.waiting')\n"
            ),
        },
        ["inventory/heartbeat.py:3: importlib.import_module('devtools.waiting')"],
        id="apps-import-tools",
    ),
]


def plant(root: Path, files: dict[str, str]) -> Tree:
    for path, source in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(source, encoding="utf-8")
    return Tree.read(root)


@pytest.mark.parametrize(("rule", "files", "expected"), PLANTED)
def test_each_rule_reports_exactly_the_violation_planted_in_a_synthetic_tree(
    tmp_path: Path,
    rule: Callable[[Tree], list[str]],
    files: dict[str, str],
    expected: list[str],
) -> None:
    assert rule(plant(tmp_path, files)) == expected


def test_a_face_listing_a_name_it_lacks_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    face = "architecture_fixture_face"
    tree = plant(
        tmp_path,
        {
            f"{face}/__init__.py": '__all__ = [\n    "present",\n    "absent",\n]\npresent = 1\n',
            f"{face}/bare.py": "present = 1\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        found = names_faces_list_but_lack(tree, [face, f"{face}.bare"])
    finally:
        for name in [m for m in sys.modules if within(m, face)]:
            del sys.modules[name]
    assert found == [
        f"{face}/__init__.py:3: __all__ lists 'absent', which {face} does not define",
        f"{face}.bare: the face {face}.bare has no __all__",
    ]


def test_an_unexplained_type_ignore_is_reported(tmp_path: Path) -> None:
    marker = "type: " + "ignore"
    (tmp_path / "a.py").write_text(
        f"x = 1  # {marker}\ny = 2  # {marker}[misc]\nz = 3  # {marker}[misc]  # why\n"
    )
    found = unexplained_type_ignores(tmp_path, ["a.py"])
    assert [f.split(":")[1] for f in found] == ["1", "2"]
