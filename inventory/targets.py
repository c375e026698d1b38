"""Target lists: Prometheus file_sd, FleetScope's own YAML/JSON, Prometheus' active targets.

Everything here only reads and validates; registering is in services.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from inventory.identity import normalised_target
from inventory.models import EndpointKind

KINDS = frozenset(EndpointKind.values)
# Label keys that steer FleetScope rather than describe the target.
STEERING_LABELS = frozenset({"kind", "__metrics_path__", "__scheme__", "__address__"})
MAX_TARGETS_PER_FILE = 10_000


class TargetFileError(ValueError):
    """The file is not a valid target list; the message says where and why."""


@dataclass(frozen=True)
class TargetSpec:
    url: str
    kind: str
    labels: dict[str, str] = field(default_factory=dict)


def parse_target_file(text: str) -> list[TargetSpec]:
    """Parse file_sd (a list of {targets, labels}) or {"endpoints": [{url, kind, labels}]}."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise TargetFileError(f"neither JSON nor YAML{where}") from None
    if isinstance(document, list):
        specs = [spec for i, group in enumerate(document) for spec in _file_sd_group(i, group)]
    elif isinstance(document, Mapping) and isinstance(document.get("endpoints"), list):
        specs = [_endpoint_entry(i, entry) for i, entry in enumerate(document["endpoints"])]
    else:
        raise TargetFileError(
            "expected a file_sd list of {targets, labels} or a mapping with 'endpoints'"
        )
    if len(specs) > MAX_TARGETS_PER_FILE:
        raise TargetFileError(f"more than {MAX_TARGETS_PER_FILE} targets in one file")
    return specs


def _file_sd_group(index: int, group: Any) -> list[TargetSpec]:
    where = f"group {index + 1}"
    if not isinstance(group, Mapping) or not isinstance(group.get("targets"), list):
        raise TargetFileError(f"{where}: needs a 'targets' list")
    labels = _string_labels(where, group.get("labels") or {})
    scheme = labels.get("__scheme__", "http")
    path = labels.get("__metrics_path__", "/metrics")
    kind = _kind(where, labels.get("kind") or kind_from_job(labels.get("job", "")))
    plain = {k: v for k, v in labels.items() if k not in STEERING_LABELS}
    specs = []
    for target in group["targets"]:
        if not isinstance(target, str) or not target or "/" in target:
            raise TargetFileError(f"{where}: target {str(target)[:80]!r} is not host:port")
        specs.append(TargetSpec(f"{scheme}://{target}{path}", kind, plain))
    return specs


# Common job names for exporters that sit beside vLLM; anything else is taken for an engine.
JOB_HINTS = (
    ("dcgm", EndpointKind.DCGM),
    ("router", EndpointKind.ROUTER),
    ("gateway", EndpointKind.GATEWAY),
    ("prober", EndpointKind.PROBER),
)


def kind_from_job(job: str) -> str:
    """Endpoint kind from a Prometheus job name, when no explicit `kind` label is given."""
    lowered = job.lower()
    for hint, kind in JOB_HINTS:
        if hint in lowered:
            return kind
    return EndpointKind.VLLM


def _endpoint_entry(index: int, entry: Any) -> TargetSpec:
    where = f"endpoint {index + 1}"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("url"), str):
        raise TargetFileError(f"{where}: needs a 'url' string")
    labels = _string_labels(where, entry.get("labels") or {})
    return TargetSpec(entry["url"], _kind(where, entry.get("kind", EndpointKind.VLLM)), labels)


def _kind(where: str, value: Any) -> str:
    if value not in KINDS:
        raise TargetFileError(f"{where}: kind must be one of {', '.join(sorted(KINDS))}")
    return str(value)


def _string_labels(where: str, labels: Any) -> dict[str, str]:
    if not isinstance(labels, Mapping):
        raise TargetFileError(f"{where}: 'labels' must be a mapping")
    out = {}
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float):
            raise TargetFileError(f"{where}: label {str(key)[:40]!r} must map a name to a string")
        out[key] = str(value)
    return out


def targets_from_prometheus(payload: Mapping[str, Any]) -> list[TargetSpec]:
    """Active targets from /api/v1/targets, with the labels Prometheus set after relabelling.

    An answer without the list, or with an entry whose labels are not a mapping, is refused
    whole (TargetFileError); entries without a scrapeUrl are skipped. A URL that several
    jobs scrape (however each spells it) is registered once, with the first job's labels.
    """
    data = payload.get("data")
    active = data.get("activeTargets") if isinstance(data, Mapping) else None
    if not isinstance(active, list):
        raise TargetFileError("Prometheus answer has no data.activeTargets list")
    if len(active) > MAX_TARGETS_PER_FILE:
        raise TargetFileError(f"more than {MAX_TARGETS_PER_FILE} active targets")
    specs: dict[str, TargetSpec] = {}
    for index, target in enumerate(active):
        where = f"data.activeTargets[{index}]"
        if not isinstance(target, Mapping) or not isinstance(target.get("scrapeUrl"), str):
            continue
        raw_labels = target.get("labels") or {}
        if not isinstance(raw_labels, Mapping):
            raise TargetFileError(f"{where}: 'labels' is not a mapping")
        labels = {
            k: str(v)
            for k, v in raw_labels.items()
            if isinstance(k, str) and not k.startswith("__")
        }
        kind = labels.pop("kind", None) or kind_from_job(labels.get("job", ""))
        url = target["scrapeUrl"]
        if normalised_target(url) not in specs:
            specs[normalised_target(url)] = TargetSpec(
                url, kind if kind in KINDS else "other", labels
            )
    return list(specs.values())
