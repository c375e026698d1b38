"""The rules hold on the real tree. Each is also run on a synthetic tree with one planted
violation (test_planted_violations), so a rule that stops catching fails too."""

from __future__ import annotations

import pytest

from tests.architecture.rules import (
    FACED,
    FACES,
    PAGE_APPS,
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
from tests.architecture.scan import ROOT, Tree


@pytest.fixture(scope="module")
def tree() -> Tree:
    return Tree.read(ROOT)


def failure(rule: str, found: list[str]) -> str:
    return f"{rule}; {len(found)} offending import(s):\n" + "\n".join(found)


def test_the_scan_sees_the_whole_tree_and_no_more(tree: Tree) -> None:
    assert "inventory/store/__init__.py" in tree.paths
    assert "tests/architecture/test_rules.py" in tree.paths
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


def test_every_silenced_type_check_names_its_error_and_says_why(tree: Tree) -> None:
    # The pattern is spelled apart so this file's own source does not match it.
    found = unexplained_type_ignores(tree.root, tree.paths)
    assert not found, "type: " + "ignore without [code]  # reason:\n" + "\n".join(found)
