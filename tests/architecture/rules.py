"""The rules the tree keeps, read from its source: each import rule is a function of a `Tree`
that returns its offenders as `file:line: import`; silenced type checks say why."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.architecture.scan import Import, Tree, within, within_any

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
