"""Files and folders: each file read as its content says, whatever its name; errors per
file; uploads capped and UTF-8 only."""

from __future__ import annotations

import shutil
from pathlib import Path

from blindspots.sources import items_from_paths, items_from_upload
from blindspots.sources.files import MAX_UPLOAD_BYTES

FIXTURES = Path(__file__).parent.parent / "fixtures"
OWN = (
    "vllm-dashboard.json",
    "vllm-rules.yml",
    "keda-scaledobject.yaml",
    "hpa-external.yaml",
    "prometheus-adapter.yaml",
)


def folder(tmp_path: Path) -> Path:
    """This module's fixtures, under misleading names, in nested folders."""
    root = tmp_path / "repo"
    (root / "dashboards" / "nested").mkdir(parents=True)
    (root / "k8s").mkdir()
    shutil.copy(FIXTURES / "vllm-dashboard.json", root / "dashboards" / "nested" / "a.json")
    shutil.copy(FIXTURES / "vllm-rules.yml", root / "dashboards" / "rules.yaml")
    for name in OWN[2:]:
        shutil.copy(FIXTURES / name, root / "k8s" / name)
    (root / "k8s" / "README.md").write_text("not read")
    (root / ".git").mkdir()
    (root / ".git" / "x.json").write_text("{not read")
    return root


def test_a_folder_is_read_recursively_each_file_by_its_content(tmp_path: Path) -> None:
    items, errors = items_from_paths([folder(tmp_path)])
    kinds = [i.kind for i in items]
    assert kinds.count("panel") == 4
    assert kinds.count("rule") == 5
    assert kinds.count("autoscaler") == 2  # the KEDA trigger and the joined HPA metric
    hpa = next(i for i in items if i.name == "mistral-engine")
    assert hpa.source.endswith("hpa-external.yaml")
    assert "prometheus-adapter.yaml" in hpa.where
    assert {e.kind for e in errors} == {"panel", "rule", "autoscaler"}
    assert len(errors) == 6


def test_each_bad_file_is_its_own_error_and_the_rest_are_read(tmp_path: Path) -> None:
    good = tmp_path / "rules.yml"
    shutil.copy(FIXTURES / "vllm-rules.yml", good)
    (tmp_path / "broken.json").write_text('{"panels": [')
    (tmp_path / "page.yaml").write_text("<!doctype html><html></html>")
    (tmp_path / "other.yml").write_text("just: a mapping\n")
    (tmp_path / "latin1.yml").write_bytes("groups: caf\xe9".encode("latin-1"))
    missing = tmp_path / "missing.json"
    items, errors = items_from_paths([tmp_path, missing])
    assert len(items) == 5
    files = {e.name: e.reason for e in errors if e.kind == "file"}
    assert files["broken.json"].startswith("malformed JSON")
    assert files["page.yaml"].startswith("an HTML page")
    assert files["other.yml"].startswith("neither a Grafana dashboard")
    assert files["latin1.yml"].startswith("not UTF-8")
    assert files["missing.json"] == "no such file or folder"


def test_an_uploaded_dashboard_is_read() -> None:
    items, errors = items_from_upload("dash.json", (FIXTURES / "vllm-dashboard.json").read_bytes())
    assert len(items) == 4 and len(errors) == 2
    assert {i.source for i in items} == {"dash.json"}


def test_an_upload_too_big_or_not_utf8_is_refused() -> None:
    items, [big] = items_from_upload("big.json", b" " * (MAX_UPLOAD_BYTES + 1))
    assert items == [] and big.reason == "bigger than 10 MiB"
    _, [binary] = items_from_upload("x.json", b"\x89PNG\r\n")
    assert binary.reason.startswith("not UTF-8")


def test_an_uploaded_rules_api_answer_is_read_as_rules() -> None:
    body = (
        b'{"status":"success","data":{"groups":[{"name":"g","rules":[{"name":"r","query":"up"}]}]}}'
    )
    items, errors = items_from_upload("rules.json", body)
    assert [i.name for i in items] == ["r"] and errors == []
