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


Copy = tuple[str, str, str | None]  # source, destination, the stage it comes from


def stages() -> dict[str, list[Copy]]:
    """Each stage's COPY lines by the stage's name (the last, unnamed: "runtime")."""
    found: dict[str, list[Copy]] = {}
    current: list[Copy] = []
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words[:1] == ["FROM"]:
            current = found.setdefault(words[3] if len(words) > 3 else "runtime", [])
        elif words[:1] == ["COPY"]:
            origin = words[1].removeprefix("--from=") if words[1].startswith("--from=") else None
            *sources, destination = words[2:] if origin else words[1:]
            current.extend((source, destination, origin) for source in sources)
    return found


def included() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns: list[str] = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return patterns


def test_the_builder_stage_copies_every_package_the_wheel_includes(tmp_path: Path) -> None:
    replay(stages()["builder"], tmp_path)
    in_image = set(find_packages(where=str(tmp_path), include=included()))
    in_repo = set(find_packages(where=str(ROOT), include=included()))
    assert in_repo - in_image == set(), "packages the image's wheel would lack"
    assert {"fleetscope", "queries", "capacity", "audit"} <= in_image


def test_the_runtime_stage_copies_what_the_processes_run_from() -> None:
    runtime = {source for source, _, origin in stages()["runtime"] if origin is None}
    assert {"manage.py", "templates", "static", "deploy/bin"} <= runtime
    assert all((ROOT / source).exists() for source in runtime)
    js = {source for source, _, _ in stages()["js"]}
    assert js == {"package.json", "package-lock.json"}


def replay(copies: list[Copy], into: Path) -> None:
    """Do what the stage's COPY lines do, into `into` (its WORKDIR). A file from the js
    stage (npm ci of package-lock.json into /src) is this checkout's copy from
    scripts/ensure-js.sh, installed from the same lock."""
    for source, destination, origin in copies:
        if origin == "builder":
            continue  # the wheels: the test builds and installs the project's own
        found = ROOT / source.removeprefix("/src/") if origin == "js" else ROOT / source
        target = into / destination
        if found.is_dir():
            shutil.copytree(found, target, dirs_exist_ok=True)
        else:
            target = target / found.name if destination.endswith("/") else target
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(found, target)


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
plotly = Client().get("/static/vendor/plotly.min.js")
assert plotly.status_code == 200, plotly.status_code
body = b"".join(plotly.streaming_content)
assert body.startswith(b"/**\\n* plotly.js (cartesian - minified)"), body[:80]
print("image ok")
"""


def test_the_image_runs_from_its_wheel_and_the_files_it_copies(tmp_path: Path) -> None:
    builder, runtime = stages()["builder"], stages()["runtime"]
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
