"""The image holds what the project is: the builder stage copies every package the wheel
would include, and the runtime stage every file it runs from.

Docker itself does not run here (no daemon): the stages' COPY and ENV lines are replayed
into directories, the project's wheel is built from the builder's copy with pip as the
builder does (pip fetches the build backend from PyPI, as in a docker build), installed
apart from this checkout, and the pages are served from the runtime's copy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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
    replay(stages()[0], tmp_path)
    in_image = set(find_packages(where=str(tmp_path), include=included()))
    in_repo = set(find_packages(where=str(ROOT), include=included()))
    assert in_repo - in_image == set(), "packages the image's wheel would lack"
    assert {"fleetscope", "queries", "capacity", "audit"} <= in_image


def test_the_runtime_stage_copies_what_the_processes_run_from() -> None:
    runtime = {source for source, _ in stages()[-1]}
    assert {"manage.py", "templates", "static", "deploy/bin"} <= runtime
    assert all((ROOT / source).exists() for source in runtime)


def replay(copies: list[tuple[str, str]], into: Path) -> None:
    """Do what the stage's COPY lines do, into `into` (its WORKDIR)."""
    for source, destination in copies:
        target = into / destination
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, dirs_exist_ok=True)
        else:
            target = target / Path(source).name if destination.endswith("/") else target
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / source, target)


def runtime_environment() -> dict[str, str]:
    """The runtime stage's ENV lines."""
    text = (ROOT / "Dockerfile").read_text().split("\nFROM ")[-1].replace("\\\n", " ")
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            for pair in line.split()[1:]:
                name, value = pair.split("=", 1)
                found[name] = value
    return found


# Run in the image's layout: every package must come from the installed wheel (not this
# checkout, which the test venv's editable install would otherwise supply), the pages
# render from the copied templates, and collected static files are served.
IMAGE_CHECK = """
import sys
from pathlib import Path
import django
django.setup()
from django.core.management import call_command
from django.test import Client
site = Path(sys.argv[1])
for name in sys.argv[2:]:
    module = __import__(name)
    assert Path(module.__file__).is_relative_to(site), (name, module.__file__)
call_command("migrate", verbosity=0)
page = Client().get("/login/")
assert page.status_code == 200, page.status_code
css = Client().get("/static/vendor/plotly.min.js")
assert css.status_code == 200, css.status_code
print("image ok")
"""


def test_the_image_runs_from_its_wheel_and_the_files_it_copies(tmp_path: Path) -> None:
    builder, runtime = stages()[0], stages()[-1]
    replay(builder, tmp_path / "src")
    # As the builder stage (RUN pip wheel .), the project's own wheel only.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
         str(tmp_path / "wheels"), str(tmp_path / "src")],
        check=True, timeout=240,
    )  # fmt: skip
    (wheel,) = (tmp_path / "wheels").glob("fleetscope-*.whl")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
         str(wheel)],
        check=True, timeout=120,
    )  # fmt: skip
    app = tmp_path / "app"
    replay(runtime, app)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "FLEETSCOPE_"))}
    env.update({k: v.replace("/app", str(app)) for k, v in runtime_environment().items()})
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.pop("PROMETHEUS_URL", None)
    env["PYTHONPATH"] = str(site)
    env["ALLOWED_HOSTS"] = "testserver"
    env["DJANGO_SETTINGS_MODULE"] = "fleetscope.settings"
    # The build's collectstatic line, with its throwaway settings.
    build = dict(env, SECRET_KEY="collectstatic-only", DATABASE_URL=f"sqlite:///{tmp_path}/b.db")
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=app, env=build, check=True, timeout=120,
    )  # fmt: skip
    (app / "var").mkdir(exist_ok=True)
    run = dict(env, SECRET_KEY="image-test", DATABASE_URL=f"sqlite:///{tmp_path}/run.db")
    packages = sorted({name.split(".")[0] for name in find_packages(str(ROOT), include=included())})
    answer = subprocess.run(
        [sys.executable, "-c", IMAGE_CHECK, str(site), *packages],
        cwd=app, env=run, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr[-3000:]
    assert "image ok" in answer.stdout
