"""The image holds what the project is: the builder stage copies every package the wheel
would include, and the runtime stage every file it runs from.

Docker itself does not run here; the stages' COPY lines are replayed into a directory and
setuptools' own package discovery (with pyproject.toml's patterns) is run on both."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from setuptools import find_packages  # type: ignore[import-untyped]  # the venv's setuptools ships no type hints

ROOT = Path(__file__).resolve().parent.parent


def stages() -> list[list[tuple[str, str]]]:
    """Each stage's COPY lines (not those from another stage), as (source, destination)."""
    found: list[list[tuple[str, str]]] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["FROM"]:
            found.append([])
        elif words[:1] == ["COPY"] and not words[1].startswith("--from"):
            *sources, destination = words[1:]
            found[-1].extend((source, destination) for source in sources)
    return found


def included() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns: list[str] = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return patterns


def test_the_builder_stage_copies_every_package_the_wheel_includes(tmp_path: Path) -> None:
    builder = stages()[0]
    for source, _ in builder:
        target = tmp_path / source
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target)
        else:
            shutil.copy(ROOT / source, target)
    in_image = set(find_packages(where=str(tmp_path), include=included()))
    in_repo = set(find_packages(where=str(ROOT), include=included()))
    assert in_repo - in_image == set(), "packages the image's wheel would lack"
    assert {"fleetscope", "queries", "capacity", "audit"} <= in_image


def test_the_runtime_stage_copies_what_the_processes_run_from() -> None:
    runtime = {source for source, _ in stages()[-1]}
    assert {"manage.py", "templates", "static", "deploy/bin"} <= runtime
    assert all((ROOT / source).exists() for source in runtime)
