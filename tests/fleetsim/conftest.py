"""Helpers for fleetsim tests: the real Prometheus and promtool binaries, and exposition parsing."""

from __future__ import annotations

import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.waiting import wait_until


def binary(name: str) -> str:
    """The Debian package's binary; a missing one is a broken machine, not a skipped test."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed: `make test` installs the Debian package "
            f"(apt-get install prometheus) before running the suite"
        )
    return path


@pytest.fixture
def promtool() -> str:
    return binary("promtool")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_prometheus(config: Path, data_dir: Path, *extra: str) -> Iterator[str]:
    """A real Prometheus on a free loopback port; yields its base URL."""
    port = free_port()
    args = [
        binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={data_dir}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
        *extra,
    ]
    log = (data_dir.parent / f"prometheus-{port}.log").open("w")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool | None:
            if proc.poll() is not None:
                log.flush()
                raise AssertionError(f"prometheus exited: {Path(log.name).read_text()[-2000:]}")
            try:
                return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200 or None
            except httpx.TransportError:
                return None

        wait_until(ready, timeout=30, what="prometheus to be ready")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def query(url: str, promql: str, **params: str | float) -> list[dict]:
    path = "query_range" if "step" in params else "query"
    resp = httpx.get(f"{url}/api/v1/{path}", params={"query": promql, **params}, timeout=10)
    resp.raise_for_status()
    body = resp.json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def samples(text: str) -> list[Sample]:
    return [s for fam in text_string_to_metric_families(text) for s in fam.samples]


def families(text: str) -> dict[str, tuple[str, list[Sample]]]:
    """Family name as the exposition's TYPE line spells it -> (type, samples)."""
    out = {}
    for fam in text_string_to_metric_families(text):
        name = fam.name + "_total" if fam.type == "counter" else fam.name
        out[name] = (fam.type, list(fam.samples))
    return out


def lint_problems(promtool: str, text: str) -> tuple[int, set[str]]:
    """promtool check metrics: (exit status, the distinct complaints without metric names)."""
    proc = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, check=False
    )
    found = set()
    for line in (proc.stdout + proc.stderr).splitlines():
        found.add(line.split(" ", 1)[1] if " " in line else line)
    return proc.returncode, found
