"""The README's map of the tree stays in step with the folders."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _layout_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Layout\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _listed_top_level_folders() -> set[str]:
    # Table rows start with the folders they describe: | `inventory/` | ... or | `slo/`, `triage/` |
    folders = set()
    for line in _layout_section().splitlines():
        cells = line.split("|")
        if len(cells) > 2:
            folders.update(re.findall(r"`([A-Za-z_][\w-]*)/`", cells[1]))
    return folders


def _top_level_packages() -> set[str]:
    return {p.parent.name for p in ROOT.glob("*/__init__.py")}


def test_every_top_level_package_is_on_the_readme_map() -> None:
    missing = _top_level_packages() - _listed_top_level_folders()
    assert not missing, f"README 'Layout' does not list: {sorted(missing)}"


def test_every_folder_on_the_readme_map_exists() -> None:
    absent = {name for name in _listed_top_level_folders() if not (ROOT / name).is_dir()}
    assert not absent, f"README 'Layout' lists folders that do not exist: {sorted(absent)}"


def test_the_map_is_read_from_the_layout_table() -> None:
    # Guards the parser above: a map it cannot read would make both tests pass vacuously.
    assert {"inventory", "queries", "dashboard", "fleetsim", "tests"} <= _listed_top_level_folders()
