"""A real Prometheus (Debian's package) on a free loopback port, for the tests that need one."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from devtools.ports import free_port
from devtools.waiting import wait_until


def binary(name: str) -> str:
    """The Debian package's binary; a missing one is a broken machine, not a skipped test."""
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"{name} is not installed: `make test` installs the Debian package "
            f"(apt-get install prometheus) before running the suite"
        )
    return path


@contextmanager
def running_prometheus(
    config: Path, data_dir: Path, *extra: str, timeout: float = 30.0, port: int | None = None
) -> Iterator[str]:
    """A real Prometheus on a free loopback port (or `port`: the same one again, for a
    restart), ready within `timeout` seconds; yields its base URL."""
    port = port or free_port()
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

        wait_until(ready, timeout=timeout, what="prometheus to be ready")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# Lets a test write samples in (devtools.remote_write); in Prometheus 2.42 a flag, not a
# feature flag.
REMOTE_WRITE_RECEIVER_FLAG = "--web.enable-remote-write-receiver"


@contextmanager
def running_remote_write_prometheus(
    workdir: Path, *extra: str, timeout: float = 30.0
) -> Iterator[str]:
    """A real Prometheus that scrapes nothing and accepts remote write at /api/v1/write, on
    a fresh TSDB under `workdir`; yields its base URL. What it then holds is exactly what
    was written to it."""
    data = workdir / "remote-write-data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    config = workdir / "remote-write-prometheus.yml"
    config.write_text("global: {scrape_interval: 15s}\nscrape_configs: []\n")
    with running_prometheus(
        config, data, REMOTE_WRITE_RECEIVER_FLAG, *extra, timeout=timeout
    ) as url:
        yield url


@contextmanager
def backfilled_prometheus(openmetrics: Path, workdir: Path, *extra: str) -> Iterator[str]:
    """A real Prometheus serving the OpenMetrics history at `openmetrics`, backfilled by
    promtool into a fresh TSDB under `workdir`; it scrapes nothing and keeps samples of
    any age. No stale markers: promtool writes none (see `running_remote_write_prometheus`
    for a history as the scrape loop writes it)."""
    data = workdir / "backfilled-data"
    shutil.rmtree(data, ignore_errors=True)
    subprocess.run(
        [binary("promtool"), "tsdb", "create-blocks-from", "openmetrics",
         str(openmetrics), str(data)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    config = workdir / "backfilled-prometheus.yml"
    config.write_text("global: {scrape_interval: 15s}\nscrape_configs: []\n")
    with running_prometheus(config, data, "--storage.tsdb.retention.time=100y", *extra) as url:
        yield url


def file_sd_config(tmp_path: Path, groups: list[dict[str, Any]], interval: str = "1s") -> Path:
    """A Prometheus config that scrapes `groups` (file_sd format) every `interval`."""
    sd = tmp_path / "targets.json"
    sd.write_text(json.dumps(groups))
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global: {{scrape_interval: {interval}, scrape_timeout: {interval}}}\n"
        "scrape_configs:\n"
        "  - job_name: fleetsim\n"
        f"    file_sd_configs: [{{files: ['{sd}'], refresh_interval: 1s}}]\n"
    )
    return config
