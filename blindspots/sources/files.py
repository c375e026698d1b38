"""Files and folders given on the command line, or a file uploaded on the page: each read
as what its content says it is (a Grafana dashboard, a Prometheus rule file or rules API
answer, Kubernetes autoscaler manifests or a prometheus-adapter config), whatever its name.
A file that cannot be read, is not UTF-8, is too big or is none of those is one error of
that file; the other files are still read. Autoscaler files are joined together (an HPA in
one file, the adapter config serving it in another)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from blindspots.sources._load import LoadError, load_json, load_yaml_documents, looks_like_html
from blindspots.sources.autoscalers import (
    autoscaler_documents,
    autoscalers_from_documents,
    is_autoscaler_document,
)
from blindspots.sources.grafana import is_dashboard, panels_from_data
from blindspots.sources.rules import rules_from_api, rules_from_data
from blindspots.types import Item, ItemError

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_UPLOAD_BYTES",
    "SUFFIXES",
    "Kind",
    "items_from_paths",
    "items_from_text",
    "items_from_upload",
]

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
# Files named on the command line may be bigger (a 10,000-panel dashboard), not unbounded.
MAX_FILE_BYTES = 64 * 1024 * 1024
SUFFIXES = (".json", ".yml", ".yaml")
Kind = Literal["dashboard", "rules", "rules-api", "autoscalers"]

Result = tuple[list[Item], list[ItemError]]


def items_from_paths(paths: Sequence[Path]) -> Result:
    """Every item of the files, and of the `.json`/`.yml`/`.yaml` files under the folders
    (recursively, hidden ones skipped, in name order)."""
    items: list[Item] = []
    errors: list[ItemError] = []
    autoscalers: list[tuple[Mapping[str, Any], str]] = []
    for path in paths:
        for file in _files(path, errors):
            source = str(file)
            try:
                if file.stat().st_size > MAX_FILE_BYTES:
                    errors.append(_file_error(source, f"bigger than {_mib(MAX_FILE_BYTES)}"))
                    continue
                content = file.read_bytes()
            except OSError as exc:
                errors.append(_file_error(source, f"cannot read: {exc.strerror or exc}"))
                continue
            _read(content, source, items, errors, autoscalers)
    _join(autoscalers, items, errors)
    return items, errors


def items_from_upload(name: str, content: bytes) -> Result:
    """An uploaded file (at most 10 MiB, UTF-8)."""
    if len(content) > MAX_UPLOAD_BYTES:
        return [], [_file_error(name, f"bigger than {_mib(MAX_UPLOAD_BYTES)}")]
    items: list[Item] = []
    errors: list[ItemError] = []
    autoscalers: list[tuple[Mapping[str, Any], str]] = []
    _read(content, name, items, errors, autoscalers)
    _join(autoscalers, items, errors)
    return items, errors


def items_from_text(text: str, source: str) -> Result:
    """Text already decoded, read as its content says."""
    return items_from_upload(source, text.encode("utf-8", "surrogatepass"))


def _mib(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB"


def _file_error(source: str, reason: str) -> ItemError:
    return ItemError("file", os.path.basename(source) or source, source, reason)


def _files(path: Path, errors: list[ItemError]) -> list[Path]:
    if path.is_dir():
        found = []
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            found += [
                Path(root, name)
                for name in sorted(names)
                if name.lower().endswith(SUFFIXES) and not name.startswith(".")
            ]
        if not found:
            errors.append(_file_error(str(path), "no .json, .yml or .yaml file in the folder"))
        return found
    if not path.exists():
        errors.append(_file_error(str(path), "no such file or folder"))
        return []
    return [path]


def _decode(content: bytes) -> str:
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(f"not UTF-8 (byte {exc.start})") from None


def _read(
    content: bytes,
    source: str,
    items: list[Item],
    errors: list[ItemError],
    autoscalers: list[tuple[Mapping[str, Any], str]],
) -> None:
    try:
        text = _decode(content)
        if looks_like_html(text):
            raise LoadError("an HTML page, not a dashboard, rule file or manifest")
        if not text.strip():
            raise LoadError("empty")
        if text.lstrip().startswith(("{", "[")):
            documents = [load_json(text)]
        else:
            documents = load_yaml_documents(text)
        kind = kind_of(documents)
    except LoadError as exc:
        errors.append(_file_error(source, str(exc)))
        return
    if kind is None:
        errors.append(
            _file_error(
                source,
                "neither a Grafana dashboard, a Prometheus rule file nor an autoscaler manifest",
            )
        )
        return
    if kind == "autoscalers":
        autoscalers += [(doc, source) for doc in autoscaler_documents(documents)]
        return
    if len(documents) != 1:
        errors.append(_file_error(source, f"{len(documents)} YAML documents in a rule file"))
        return
    if kind == "dashboard":
        found, bad = panels_from_data(documents[0], source)
    elif kind == "rules-api":
        found, bad = rules_from_api(documents[0])
    else:
        found, bad = rules_from_data(documents[0], source)
    items += found
    errors += bad


def kind_of(documents: Sequence[Any]) -> Kind | None:
    """What loaded documents are, by their content."""
    if len(documents) == 1 and isinstance(documents[0], Mapping):
        data = documents[0]
        if is_dashboard(data):
            return "dashboard"
        if isinstance(data.get("groups"), list):
            return "rules"
        data_part = data.get("data")
        if isinstance(data_part, Mapping) and isinstance(data_part.get("groups"), list):
            return "rules-api"
    if documents and any(is_autoscaler_document(doc) for doc in documents):
        return "autoscalers"
    return None


def _join(
    autoscalers: list[tuple[Mapping[str, Any], str]],
    items: list[Item],
    errors: list[ItemError],
) -> None:
    if autoscalers:
        found, bad = autoscalers_from_documents(autoscalers)
        items += found
        errors += bad
