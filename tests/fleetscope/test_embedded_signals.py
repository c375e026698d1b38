"""Stopping the embedded server (`manage.py serve_embedded`) by signal, with scrape workers.

SIGTERM (kill, systemd, docker stop) must stop it as Ctrl-C does: the scrape worker
processes and multiprocessing's resource tracker end with it, and it exits 0. Ctrl-C
still ends in Python's KeyboardInterrupt exit (killed by SIGINT).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools.ports import free_port
from devtools.terminal import with_terminal_signals
from devtools.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def _children(parent: int) -> dict[int, tuple[int, str]]:
    """pid -> (start time, command line) of the running children of `parent`."""
    found: dict[int, tuple[int, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat(int(entry.name))
        if stat is None or stat[1] != parent or stat[0] == "Z":
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (FileNotFoundError, ProcessLookupError):
            continue
        found[int(entry.name)] = (stat[2], cmdline)
    return found


def _running(pid: int, started: int) -> bool:
    stat = _stat(pid)
    # Same pid and start time (not a reused pid), and not a zombie waiting for its reaper.
    return stat is not None and stat[2] == started and stat[0] != "Z"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    var = tmp_path_factory.mktemp("var")
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL"))
    }
    environment.update(
        DJANGO_SETTINGS_MODULE="fleetscope.settings",
        SECRET_KEY="x" * 50,
        FLEETSCOPE_VAR_DIR=str(var),
        FLEETSCOPE_OUTBOUND_ALLOW_LOOPBACK="true",
        FLEETSCOPE_DEMO_HISTORY_HOURS="0",
        FLEETSCOPE_SCRAPE_PROCESSES="2",
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=environment,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return environment


@pytest.fixture
def server(env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """The embedded server with the demo fleet, once its scrape workers are running."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve_embedded", "--demo", "--port", str(free_port())],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Its own process group: orphans stay in it, so the clean-up below reaches them.
        start_new_session=True,
        preexec_fn=with_terminal_signals,
    )
    try:
        assert process.stdout is not None
        output = []
        for line in process.stdout:
            output.append(line)
            if "running at" in line:
                break
        assert "running at" in "".join(output), "".join(output)
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _workers_and_tracker(server: subprocess.Popen[str]) -> dict[int, tuple[int, str]]:
    # The scheduler scrapes the demo fleet at once; the pool spawns its two workers, and
    # with them multiprocessing's resource tracker.
    def probe() -> dict[int, tuple[int, str]] | None:
        children = _children(server.pid)
        lines = [cmdline for _, cmdline in children.values()]
        workers = sum("spawn_main" in line for line in lines)
        tracker = sum("resource_tracker" in line for line in lines)
        return children if workers == 2 and tracker == 1 else None

    return wait_until(probe, timeout=60, what="two scrape workers and the resource tracker")


@pytest.mark.parametrize(
    ("signum", "exit_status"),
    [
        # A requested stop is a clean stop: 0, which systemd and Docker take as success.
        (signal.SIGTERM, 0),
        # Ctrl-C, unchanged: KeyboardInterrupt, and Python then ends itself by SIGINT.
        (signal.SIGINT, -signal.SIGINT),
    ],
    ids=["SIGTERM", "SIGINT"],
)
def test_a_stop_signal_ends_the_scrape_workers_and_the_resource_tracker_too(
    server: subprocess.Popen[str], signum: signal.Signals, exit_status: int
) -> None:
    children = _workers_and_tracker(server)
    server.send_signal(signum)
    returncode = wait_until(server.poll, timeout=30, what="the server to exit")
    workers = [pid for pid, (started, cmd) in children.items() if "spawn_main" in cmd]
    assert not [pid for pid in workers if _running(pid, children[pid][0])], "orphaned workers"
    # The resource tracker ends when the last process holding its pipe (the server) is
    # gone, so it may take a moment after the server.
    wait_until(
        lambda: (
            None if any(_running(pid, started) for pid, (started, _) in children.items()) else True
        ),
        timeout=10,
        what="the server's children to end: "
        + ", ".join(f"{pid} {cmd}" for pid, (_, cmd) in children.items()),
    )
    assert returncode == exit_status
    if signum == signal.SIGTERM:
        assert server.stdout is not None
        said = server.stdout.read()  # everyone holding the pipe has ended
        assert "Traceback" not in said and "leaked" not in said, said
