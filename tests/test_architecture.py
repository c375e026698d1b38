"""The import rules, read from the imports themselves.

Every .py file of the tree is parsed with `ast` (`.venv`, `var`, hidden folders and
migrations skipped): imports inside functions and under `if TYPE_CHECKING:` count, and so
does `importlib.import_module("a.literal.name")`. Each rule is a function of a `Tree` that
returns its offenders as `file:line: import`; each is run on the real tree, and again on a
small synthetic tree with one planted violation, so a rule that stops catching fails too.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = frozenset({".venv", "var", "migrations", "__pycache__", "node_modules"})

PAGE_APPS = ("dashboard", "slo", "triage", "capacity", "blindspots")
APPS = ("fleetscope", "inventory", "queries", *PAGE_APPS, "audit", "fleetsim")
TOOLS = ("devtools", "benchmarks")
DJANGO = ("django", "channels", "celery")
PROJECT = ("fleetscope", "inventory", "queries", *PAGE_APPS, "audit", "devtools")

# Packages entered from outside only through their face (the package itself).
FACED = (
    "inventory.catalog",
    "inventory.exposition",
    "inventory.exposition.openmetrics",
    "inventory.history",
    "inventory.scraping",
    "inventory.store",
    "queries",
    "queries.local",
    "queries.promql",
)
STORE = "inventory.store"
STORE_ENCODING = "inventory.store.encoding"  # the store's second face, free of Django
STORE_MODELS = ("SampleFrame", "SeriesSet")
FACES = (*FACED, STORE_ENCODING)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def within_any(module: str, packages: Iterable[str]) -> bool:
    return any(within(module, package) for package in packages)


def module_of(path: str) -> str:
    """`a/b/__init__.py` -> `a.b`, `a/b.py` -> `a.b`."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Import:
    """One imported name (or module) of one import statement."""

    path: str  # the importing file, relative to the root
    line: int
    statement: str  # as written, narrowed to this one name: "from x import a as b"
    module: str  # the module named, relative imports resolved
    name: str | None  # the name taken from it (`from module import name`), else None
    target: str  # the module reached: `module.name` when that is a module of the tree

    @property
    def importer(self) -> str:
        return module_of(self.path)

    @property
    def is_test(self) -> bool:
        return self.path.startswith("tests/")

    @property
    def home(self) -> str:
        """The package the file belongs to: its own module, or for a test the package its
        folder mirrors (`tests/queries/local/test_x.py` -> `queries.local`)."""
        if not self.is_test:
            return self.importer
        return ".".join(self.path.split("/")[1:-1])

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.statement}"


@dataclass(frozen=True)
class Tree:
    root: Path
    paths: tuple[str, ...]
    imports: tuple[Import, ...]
    exports: dict[str, tuple[str, dict[str, int]]]  # module -> (path, {name in __all__: line})

    @classmethod
    def read(cls, root: Path) -> Tree:
        paths = tuple(python_files(root))
        modules = frozenset(module_of(path) for path in paths)
        imports: list[Import] = []
        exports: dict[str, tuple[str, dict[str, int]]] = {}
        for path in paths:
            source = (root / path).read_text(encoding="utf-8")
            syntax = ast.parse(source, filename=path)
            imports.extend(imports_of(path, syntax, modules))
            listed = all_of(syntax)
            if listed is not None:
                exports[module_of(path)] = (path, listed)
        imports.sort(key=lambda i: (i.path, i.line, i.statement))
        return cls(root, paths, tuple(imports), exports)


def python_files(root: Path) -> Iterator[str]:
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and d[0] != ".")
        relative = Path(folder).relative_to(root)
        for filename in sorted(filenames):
            if filename.endswith(".py"):
                yield (relative / filename).as_posix()


def imports_of(path: str, syntax: ast.Module, modules: frozenset[str]) -> Iterator[Import]:
    here = module_of(path)
    package = here if path.endswith("__init__.py") else here.rpartition(".")[0]
    for node in ast.walk(syntax):
        if isinstance(node, ast.Import):
            for alias in node.names:
                statement = f"import {spelled(alias)}"
                yield Import(path, node.lineno, statement, alias.name, None, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = absolute(node, package)
            written = "." * node.level + (node.module or "")
            for alias in node.names:
                inner = f"{module}.{alias.name}" if module else alias.name
                target = inner if inner in modules else module
                statement = f"from {written} import {spelled(alias)}"
                yield Import(path, node.lineno, statement, module, alias.name, target)
        elif isinstance(node, ast.Call) and (name := dynamically_imported(node)) is not None:
            yield Import(path, node.lineno, ast.unparse(node), name, None, name)


def spelled(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


def absolute(node: ast.ImportFrom, package: str) -> str:
    if node.level == 0:
        return node.module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def dynamically_imported(node: ast.AST) -> str | None:
    """The literal name given to `importlib.import_module(...)` or `__import__(...)`."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    first = node.args[0]
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def all_of(syntax: ast.Module) -> dict[str, int] | None:
    """The names of a module-level `__all__` list or tuple, with their lines."""
    for node in syntax.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if isinstance(node, ast.Assign | ast.AnnAssign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in targets
        ):
            value = node.value
            if isinstance(value, ast.List | ast.Tuple):
                return {
                    e.value: e.lineno
                    for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
            return {}
    return None


# The rules: each returns its offenders, one `file:line: import` a line.


def offenders(tree: Tree, breaks: Callable[[Import], bool]) -> list[str]:
    return [str(i) for i in tree.imports if breaks(i)]


def inventory_imports_of_page_apps_or_queries(tree: Tree) -> list[str]:
    return offenders(
        tree,
        lambda i: within(i.importer, "inventory") and within_any(i.target, ("queries", *PAGE_APPS)),
    )


def queries_imports_of_page_apps(tree: Tree) -> list[str]:
    return offenders(
        tree, lambda i: within(i.importer, "queries") and within_any(i.target, PAGE_APPS)
    )


def fleetsim_imports_of_django_or_the_project(tree: Tree) -> list[str]:
    return offenders(
        tree,
        lambda i: within(i.importer, "fleetsim") and within_any(i.target, (*DJANGO, *PROJECT)),
    )


def store_internals_reached_from_outside(tree: Tree) -> list[str]:
    def breaks(i: Import) -> bool:
        if i.path.startswith(("inventory/store/", "tests/inventory/store/")):
            return False
        frames = i.module == "inventory.models" and i.name in (*STORE_MODELS, "*")
        return frames or (within(i.target, STORE) and i.target not in (STORE, STORE_ENCODING))

    return offenders(tree, breaks)


def faced_packages_entered_past_their_face(tree: Tree) -> list[str]:
    """Inner modules imported from outside their faced package, and names imported from a
    face that its `__all__` does not list."""
    found = []
    for i in tree.imports:
        if i.target in FACES:
            exported = tree.exports.get(i.target, ("", None))[1]
            named = i.target == i.module and i.name not in (None, "*")
            if named and exported is not None and i.name not in exported:
                found.append(f"{i}  ({i.target}.__all__ does not list {i.name})")
            continue
        for package in sorted(FACED, key=len, reverse=True):  # innermost first
            if i.target.startswith(package + ".") and not within(i.home, package):
                found.append(f"{i}  (from outside {package}: use its face)")
                break
    return found


def private_names_imported(tree: Tree) -> list[str]:
    def private(name: str | None) -> bool:
        return name is not None and name[:1] == "_" and not (name[:2] == "__" and name[-2:] == "__")

    return offenders(tree, lambda i: private(i.name))


def tools_or_tests_imported_out_of_place(tree: Tree) -> list[str]:
    def breaks(i: Import) -> bool:
        if within_any(i.importer, TOOLS):
            return within(i.target, "tests")
        if within_any(i.importer, APPS):
            return within_any(i.target, ("tests", *TOOLS))
        return False

    return offenders(tree, breaks)


def names_faces_list_but_lack(tree: Tree, faces: Iterable[str]) -> list[str]:
    found = []
    for face in faces:
        module = importlib.import_module(face)
        path, lines = tree.exports.get(face, (face, {}))
        listed = getattr(module, "__all__", None)
        if listed is None:
            found.append(f"{path}: the face {face} has no __all__")
            continue
        for name in listed:
            if not hasattr(module, name):
                where = f"{path}:{lines[name]}" if name in lines else path
                found.append(f"{where}: __all__ lists {name!r}, which {face} does not define")
    return found


# The real tree.


@pytest.fixture(scope="module")
def tree() -> Tree:
    return Tree.read(ROOT)


def failure(rule: str, found: list[str]) -> str:
    return f"{rule}; {len(found)} offending import(s):\n" + "\n".join(found)


def test_the_scan_sees_the_whole_tree_and_no_more(tree: Tree) -> None:
    assert "inventory/store/__init__.py" in tree.paths
    assert "tests/test_architecture.py" in tree.paths
    assert not [p for p in tree.paths if p.startswith((".venv/", "var/")) or "/migrations/" in p]
    assert len(tree.paths) > 200, tree.paths
    assert len(tree.imports) > 1000


def test_inventory_imports_no_page_app_or_the_query_seam(tree: Tree) -> None:
    found = inventory_imports_of_page_apps_or_queries(tree)
    assert not found, failure(
        "inventory must import none of queries, " + ", ".join(PAGE_APPS), found
    )


def test_queries_imports_no_page_app(tree: Tree) -> None:
    found = queries_imports_of_page_apps(tree)
    assert not found, failure("queries must import none of " + ", ".join(PAGE_APPS), found)


def test_fleetsim_imports_neither_django_nor_the_project(tree: Tree) -> None:
    found = fleetsim_imports_of_django_or_the_project(tree)
    assert not found, failure("fleetsim must import neither Django nor the project", found)


def test_nothing_outside_the_store_touches_its_frames_or_inner_modules(tree: Tree) -> None:
    found = store_internals_reached_from_outside(tree)
    assert not found, failure(
        "outside inventory/store/ (and its tests), import neither SampleFrame nor SeriesSet, "
        "and of the store only inventory.store or inventory.store.encoding",
        found,
    )


def test_faced_packages_are_entered_only_through_their_faces(tree: Tree) -> None:
    found = faced_packages_entered_past_their_face(tree)
    assert not found, failure(
        "outside " + ", ".join(FACED) + " import only the face (inventory.store.encoding "
        "excepted; a test may import inner modules of the package it mirrors)",
        found,
    )


def test_no_private_name_is_imported_from_another_module(tree: Tree) -> None:
    found = private_names_imported(tree)
    assert not found, failure("import no name starting with _ from another module", found)


def test_apps_import_no_tests_or_tools_and_tools_import_no_tests(tree: Tree) -> None:
    found = tools_or_tests_imported_out_of_place(tree)
    assert not found, failure(
        "benchmarks and devtools import nothing from tests; the apps nothing from tests, "
        "devtools or benchmarks",
        found,
    )


def test_every_name_a_face_lists_in_all_exists(tree: Tree) -> None:
    faces = dict.fromkeys([*FACES, *tree.exports])
    found = names_faces_list_but_lack(tree, faces)
    assert not found, failure("a face's __all__ lists only names it defines", found)


# Each rule, on a synthetic tree with one planted violation among allowed imports.

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


# Silenced type checks say which error and why, on the same line.

IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[\w, -]+\])?(?P<rest>.*)$")


def unexplained_type_ignores(root: Path, paths: Iterable[str]) -> list[str]:
    found = []
    for path in paths:
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            match = IGNORE.search(line)
            if match is None:
                continue
            reason = match.group("rest").strip().lstrip("#").strip()
            if not match.group("codes") or not reason:
                found.append(f"{path}:{number}: {line.strip()}")
    return found


def test_every_silenced_type_check_names_its_error_and_says_why(tree: Tree) -> None:
    # The pattern is spelled apart so this file's own source does not match it.
    found = unexplained_type_ignores(tree.root, tree.paths)
    assert not found, "type: " + "ignore without [code]  # reason:\n" + "\n".join(found)


def test_an_unexplained_type_ignore_is_reported(tmp_path: Path) -> None:
    marker = "type: " + "ignore"
    (tmp_path / "a.py").write_text(
        f"x = 1  # {marker}\ny = 2  # {marker}[misc]\nz = 3  # {marker}[misc]  # why\n"
    )
    found = unexplained_type_ignores(tmp_path, ["a.py"])
    assert [f.split(":")[1] for f in found] == ["1", "2"]
