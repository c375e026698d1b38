"""`python -m fleetsim`: bad input is one line and exit status 2; good input does its job."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devtools.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def fleetsim(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fleetsim", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["serve", "--replicas", "2", "--scenario", "meteor-strike"], "invalid choice"),
        (["serve", "--replicas", "2", "--dialect", "v2"], "invalid choice"),
        (["serve", "--replicas", "2", "--warp-drive"], "unrecognized arguments"),
        (["serve", "--replicas", "0"], "--replicas must be at least 1"),
        (["serve", "--replicas", "1", "--scenario", "collective-degradation"], "tensor"),
        (["serve", "--replicas", "2", "--dp", "2", "--dialect", "v0"], "engine label"),
        (["history", "--replicas", "0", "--hours", "1", "--out", "x.om"], "at least 1"),
        (["targets", "--replicas", "2", "--base-port", "0"], "fixed --base-port"),
        (["serve", "--replicas", "2", "--dialect-of", "5=v0"], "names replica 5, but"),
        (["serve", "--replicas", "2", "--dialect-of", "1=v9"], "unknown dialect 'v9'"),
        (["serve", "--replicas", "2", "--dialect-of", "1:v0"], "REPLICA=DIALECT pairs"),
        (["serve", "--replicas", "2", "--dp", "2", "--dialect-of", "1=v0"], "engine label"),
        (["serve", "--replicas", "1", "--dialect", "v0", "--scenario", "version-skew"], "oldest"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(args: list[str], says: str) -> None:
    result = fleetsim(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fleetsim: error:"), result.stderr
    assert says in lines[0]
    assert result.stdout == ""


def test_a_port_in_use_is_one_line_and_exit_status_2(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        sd = tmp_path / "sd.json"
        result = fleetsim(
            "serve", "--replicas", "1", "--base-port", str(port), "--file-sd", str(sd)
        )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"fleetsim: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    assert not sd.exists()  # nothing half-started, nothing written


def test_targets_prints_file_sd_json_with_the_port_convention() -> None:
    result = fleetsim("targets", "--replicas", "2", "--base-port", "8000")
    assert result.returncode == 0, result.stderr
    groups = json.loads(result.stdout)
    assert [g["targets"][0] for g in groups] == [
        "127.0.0.1:8000", "127.0.0.1:8001", "127.0.0.1:9000", "127.0.0.1:9001",
        "127.0.0.1:10000", "127.0.0.1:10001",
    ]  # fmt: skip
    assert [g["labels"]["job"] for g in groups] == [
        "vllm", "vllm", "dcgm-exporter", "dcgm-exporter", "fleetscope-gateway",
        "fleetscope-prober",
    ]  # fmt: skip


def test_history_writes_openmetrics_and_its_manifest(tmp_path: Path) -> None:
    out = tmp_path / "fleet.om"
    result = fleetsim(
        "history", "--replicas", "1", "--scenario", "gpu-throttle", "--hours", "0.05",
        "--at", "60", "--duration", "60", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert text.endswith("# EOF\n")
    assert "# TYPE vllm:prompt_tokens counter" in text
    manifest = json.loads((tmp_path / "fleet.om.manifest.json").read_text())
    assert manifest["incident"] == "gpu-throttle"
    assert manifest["window"]["end"] - manifest["window"]["start"] == 60


def test_history_with_a_dialect_per_replica_writes_a_mixed_fleet(tmp_path: Path) -> None:
    out = tmp_path / "fleet.om"
    result = fleetsim(
        "history", "--replicas", "3", "--dialect-of", "1=v0,2=v1-0.8", "--scenario",
        "collective-degradation", "--hours", "0.05", "--at", "60", "--duration", "60",
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "fleet.om.manifest.json").read_text())
    assert [r["dialect"] for r in manifest["replicas"]] == ["current", "v0", "v1-0.8"]
    assert manifest["affected_replicas"][0]["dialect"] == "v0"
    itl = [s for s in manifest["expected_signals"] if s["key"].endswith("token_latency_seconds")]
    assert [s["metric"] for s in itl] == ["vllm:time_per_output_token_seconds"]
    swapped = [line for line in out.read_text().splitlines() if "num_requests_swapped{" in line]
    assert swapped and all('instance="127.0.0.1:18001"' in line for line in swapped)


def test_serve_prints_targets_writes_file_sd_and_stops_on_sigterm(tmp_path: Path) -> None:
    sd, manifest = tmp_path / "sd.json", tmp_path / "manifest.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fleetsim", "serve", "--replicas", "1", "--base-port", "0",
         "--file-sd", str(sd), "--manifest", str(manifest)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: manifest.exists() or None, timeout=30, what="the manifest")
        groups = json.loads(sd.read_text())
        assert len(groups) == 4
        url = f"http://{groups[0]['targets'][0]}/metrics"
        assert httpx.get(url, timeout=10).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "vllm" in out and "/metrics" in out and "file_sd:" in out


# Where files go: never into the current directory unless the user names a path there.


def child_env(**extra: str) -> dict[str, str]:
    """The environment without FLEETSCOPE_VAR_DIR (unless given), the tree importable from
    any directory."""
    env = {k: v for k, v in os.environ.items() if k != "FLEETSCOPE_VAR_DIR"}
    return env | {"PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"} | extra


def serve_until_written(cwd: Path, *args: str, manifest: Path, env: dict[str, str]) -> str:
    """Run `fleetsim serve` in `cwd` until `manifest` exists, stop it; its stdout."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fleetsim", "serve", "--replicas", "1", "--base-port", "0", *args],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(
            lambda: manifest.exists() or proc.poll() is not None or None,
            timeout=30,
            what="the manifest",
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return out


def listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "cwd").mkdir()
    return tmp_path / "cwd"


def test_serve_writes_into_the_out_dir_and_nothing_into_the_current_directory(
    cwd: Path, tmp_path: Path
) -> None:
    out_dir = tmp_path / "out" / "made-for-it"
    manifest = out_dir / "fleetsim-manifest.json"
    out = serve_until_written(cwd, "--out-dir", str(out_dir), manifest=manifest, env=child_env())
    assert listing(cwd) == []
    assert listing(out_dir) == ["fleetsim-manifest.json", "fleetsim-targets.json"]
    assert len(json.loads((out_dir / "fleetsim-targets.json").read_text())) == 4
    assert json.loads(manifest.read_text())["incident"] == "steady"
    assert f"file_sd: {out_dir / 'fleetsim-targets.json'}  manifest: {manifest}" in out


def test_serve_writes_into_fleetscope_var_dir_when_it_is_set(cwd: Path, tmp_path: Path) -> None:
    var = tmp_path / "elsewhere" / "var"
    env = child_env(FLEETSCOPE_VAR_DIR=str(var))
    serve_until_written(cwd, manifest=var / "fleetsim-manifest.json", env=env)
    assert listing(cwd) == []
    assert listing(var) == ["fleetsim-manifest.json", "fleetsim-targets.json"]


def test_serve_writes_into_var_under_the_current_directory_by_default(cwd: Path) -> None:
    serve_until_written(cwd, manifest=cwd / "var" / "fleetsim-manifest.json", env=child_env())
    assert listing(cwd) == ["var", "var/fleetsim-manifest.json", "var/fleetsim-targets.json"]


def test_serve_keeps_a_path_given_on_the_command_line_as_given(cwd: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    serve_until_written(
        cwd, "--out-dir", str(out_dir), "--file-sd", "sd.json",
        manifest=out_dir / "fleetsim-manifest.json", env=child_env(),
    )  # fmt: skip
    assert listing(cwd) == ["sd.json"]
    assert listing(out_dir) == ["fleetsim-manifest.json"]


def test_serve_that_cannot_write_its_out_dir_says_so_in_one_line(cwd: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    result = subprocess.run(
        [sys.executable, "-m", "fleetsim", "serve", "--replicas", "1", "--base-port", "0",
         "--out-dir", str(blocker / "out")],
        cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"fleetsim: error: cannot write {blocker / 'out' / 'fleetsim-targets.json'}: "
        "Not a directory"
    ]
    assert listing(cwd) == []


def test_history_and_targets_write_only_where_out_says(cwd: Path) -> None:
    history = subprocess.run(
        [sys.executable, "-m", "fleetsim", "history", "--replicas", "1", "--hours", "0.01",
         "--out", "fleet.om"],
        cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert history.returncode == 0, history.stderr
    assert listing(cwd) == ["fleet.om", "fleet.om.manifest.json"]
    (cwd / "fleet.om").unlink()
    (cwd / "fleet.om.manifest.json").unlink()
    printed = subprocess.run(
        [sys.executable, "-m", "fleetsim", "targets", "--replicas", "1"],
        cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)
    assert listing(cwd) == []
