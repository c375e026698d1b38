"""The README's map of the tree stays in step with the folders, and every command in its
```sh blocks runs as written against a setup like `make demo`'s."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from devtools.prometheus import file_sd_config, running_prometheus
from devtools.waiting import wait_until
from fleetsim.api import sample_exposition, start_fleet
from fleetsim.targets import file_sd

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


# --- Every command block -----------------------------------------------------------------

# The line the README has readers run once, before its commands, in a shell beside
# `make demo`; every command below runs after it, as a reader would paste it.
DEMO_ENV_LINE = "set -a; . var/demo.env; set +a"

# Lines that cannot run in a test, with the reason. Matched on the command without its
# trailing comment; benchmark lines by prefix.
NOT_RUN = {
    "make demo": "serves until Ctrl-C; the test builds the same setup instead "
    "(scripts/demo-env.sh, migrate, a fleetsim fleet registered as `demo`)",
    "make test": "the whole suite, which this test is part of",
    ".venv/bin/python -m fleetsim history --replicas 8 --scenario kv-pressure --hours 6 "
    "--out var/history.om": "writes ~1.7 GB in ~45 s; the 1-hour mixed-fleet history line "
    "runs the same code",
}
NOT_RUN_PREFIXES = {
    ".venv/bin/python benchmarks/": "minutes each (overview.py 7-25 min on 2 cores) and the "
    "README shows no small form",
}

# Placeholders that cannot exist in a test, and what stands in for them.
REPLICA_URL = "http://10.20.0.5:8000/metrics"
PROMETHEUS_URL = "http://prometheus:9090"
# Files the README's lines read from the current directory; the test writes them there.
INPUT_FILES = ("targets.json", "metrics.txt", "fleet.om")
# A server: it passes when it comes up, writes its manifest and stops cleanly on Ctrl-C.
SERVER_PREFIX = ".venv/bin/python -m fleetsim serve "


def _sh_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def _command(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line).strip()


def _not_run_reason(line: str) -> str | None:
    command = _command(line)
    if command in NOT_RUN:
        return NOT_RUN[command]
    return next((why for p, why in NOT_RUN_PREFIXES.items() if command.startswith(p)), None)


def _runnable_lines() -> list[str]:
    return [
        line
        for line in _sh_lines()
        if _not_run_reason(line) is None and _command(line) != DEMO_ENV_LINE
    ]


@dataclass(frozen=True)
class Checkout:
    """A stand-in for the checkout after `make demo`: the real .venv and manage.py, its own
    var/ with the env file the demo writes, a migrated database and a live `demo` fleet."""

    cwd: Path
    environ: dict[str, str]
    replacements: dict[str, str]

    def run(self, line: str, *, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        for placeholder, value in self.replacements.items():
            line = line.replace(placeholder, value)
        return subprocess.run(
            ["bash", "-c", f"set -e\n{DEMO_ENV_LINE}\n{line}"],
            cwd=self.cwd,
            env=self.environ,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def must_run(self, line: str) -> None:
        done = self.run(line)
        assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stderr[-3000:]}"


def _clean_environ() -> dict[str, str]:
    # Nothing of the test settings leaks in (pytest-django's DJANGO_SETTINGS_MODULE, the
    # loopback allowance, a DATABASE_URL): the commands get only what the env file gives.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")
    return {name: os.environ[name] for name in keep if name in os.environ}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checkout]:
    cwd = tmp_path_factory.mktemp("checkout")
    for name in (".venv", "manage.py"):
        (cwd / name).symlink_to(ROOT / name)
    environ = _clean_environ()
    subprocess.run(
        [str(ROOT / "scripts" / "demo-env.sh")],
        env={**environ, "FLEETSCOPE_VAR_DIR": str(cwd / "var")},
        check=True,
        timeout=30,
    )
    with start_fleet(replicas=4, scenario="kv-pressure", at=180.0, seed=0) as sim:
        groups = file_sd(sim.targets)
        (cwd / "targets.json").write_text(json.dumps(groups))
        (cwd / "metrics.txt").write_text(sample_exposition())
        prom_dir = tmp_path_factory.mktemp("prometheus")
        (prom_dir / "data").mkdir()
        with running_prometheus(file_sd_config(prom_dir, groups), prom_dir / "data") as prom_url:
            here = Checkout(cwd, environ, {})
            here.must_run(".venv/bin/python manage.py migrate --noinput")
            here.must_run(".venv/bin/python manage.py import_targets targets.json --fleet demo")
            here.must_run(
                ".venv/bin/python -m fleetsim history --replicas 2 --hours 0.25 --out fleet.om"
            )

            def discovered() -> bool | None:
                answer = httpx.get(f"{prom_url}/api/v1/targets?state=active", timeout=5).json()
                return len(answer["data"]["activeTargets"]) == len(groups) or None

            wait_until(discovered, timeout=30, what="prometheus to discover the fleet")
            replica = next(t.url for t in sim.targets if t.kind == "vllm")
            yield Checkout(cwd, environ, {REPLICA_URL: replica, PROMETHEUS_URL: prom_url})


def test_every_sh_line_either_runs_or_says_why_not() -> None:
    lines = _sh_lines()
    assert DEMO_ENV_LINE in lines, "README no longer tells readers to load var/demo.env"
    first_manage = next(i for i, line in enumerate(lines) if "manage.py" in line)
    assert lines.index(DEMO_ENV_LINE) < first_manage
    commands = {_command(line) for line in lines}
    stale = set(NOT_RUN) - commands
    assert not stale, f"NOT_RUN lists lines the README no longer has: {sorted(stale)}"
    for prefix in NOT_RUN_PREFIXES:
        assert any(c.startswith(prefix) for c in commands), f"no README line starts {prefix!r}"
    runnable = " ".join(_runnable_lines())
    for placeholder in (REPLICA_URL, PROMETHEUS_URL, *INPUT_FILES):
        assert placeholder in runnable, f"the README no longer uses {placeholder!r}"
    assert any(line.startswith(SERVER_PREFIX) for line in _runnable_lines())


@pytest.mark.parametrize("line", _runnable_lines(), ids=_command)
def test_readme_command_runs_as_written(checkout: Checkout, line: str) -> None:
    if line.startswith(SERVER_PREFIX):
        _serve_until_ready(checkout, line)
    else:
        checkout.must_run(line)


def _serve_until_ready(checkout: Checkout, line: str) -> None:
    manifest = checkout.cwd / "var" / "fleetsim-manifest.json"
    manifest.unlink(missing_ok=True)
    proc = subprocess.Popen(
        ["bash", "-c", f"set -e\n{DEMO_ENV_LINE}\nexec {line}"],
        cwd=checkout.cwd,
        env=checkout.environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def up() -> bool | None:
            if proc.poll() is not None:
                _, err = proc.communicate()
                raise AssertionError(f"{line}\nexit {proc.returncode}\n{err}")
            return manifest.exists() or None

        wait_until(up, timeout=30, what="fleetsim serve to write its manifest")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, f"{line}\nexit {proc.returncode} on Ctrl-C\n{err}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
