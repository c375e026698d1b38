"""Helpers for fleetsim tests: the real Prometheus and promtool binaries, and exposition parsing."""

from __future__ import annotations

import subprocess

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from devtools.prometheus import binary


@pytest.fixture
def promtool() -> str:
    return binary("promtool")


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
