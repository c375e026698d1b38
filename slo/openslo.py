"""OpenSLO v1 import and export of a fleet's SLOs.

One `kind: SLO` document per FleetScope SLO, `spec.service` naming the fleet, one entry of
`spec.objectives` per objective. What OpenSLO has no word for (the objective kind, the
selector, owner, runbook, bad finish reasons, paging floors) travels in `fleetscope.io/`
labels and annotations, so an export imports back exactly. Documents written elsewhere
import when they can be mapped: a `thresholdMetric` on a vLLM latency histogram, or a
good/total `ratioMetric` on `vllm:request_success_total`.

An import checks every document before writing any, then saves them all in one
transaction; the first problem is one `OpenSloError` naming the document and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml
from django.db import transaction

from inventory.catalog import CATALOG, entry_for_name
from inventory.models import Fleet
from slo.models import DEFAULT_MIN_BAD_EVENTS, DEFAULT_MIN_REQUESTS_TO_PAGE, Slo
from slo.objectives import LATENCY_KINDS, OBJECTIVE_KINDS
from slo.services import (
    ObjectiveInput,
    SloDefinition,
    SloDefinitionError,
    fleet_get,
    slo_definition_check,
    slo_definition_save,
)

API_VERSION = "openslo/v1"
MAX_BYTES = 1024 * 1024
MAX_DOCUMENTS = 500
PREFIX = "fleetscope.io/"
KIND_LABEL = PREFIX + "kind"
DEFAULT_REASONS = "abort,error"
# Slo attribute -> the annotation that carries it; values are strings in OpenSLO.
ANNOTATIONS = {
    "model_name": PREFIX + "model-name",
    "instances": PREFIX + "instances",
    "owner": PREFIX + "owner",
    "runbook_url": PREFIX + "runbook-url",
    "bad_finish_reasons": PREFIX + "bad-finish-reasons",
    "min_requests_to_page": PREFIX + "min-requests-to-page",
    "min_bad_events": PREFIX + "min-bad-events",
}
# Where a service field sits in a document, for error messages.
FIELD_PATHS = {
    "slug": "metadata.name",
    "name": "metadata.displayName",
    "description": "spec.description",
    "window_days": "spec.timeWindow[0].duration",
    "objectives": "spec.objectives",
    **{attr: f"metadata.annotations.{key}" for attr, key in ANNOTATIONS.items()},
}
KIND_OF_KEY = {info.key: kind for kind, info in OBJECTIVE_KINDS.items()}
DURATION = re.compile(r"([1-9][0-9]{0,3})([dw])")
METRIC_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


class OpenSloError(ValueError):
    """A file that cannot be imported; the message names the document and the field."""


class _Problem(Exception):
    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")


# Export.


def slo_export_text(*, fleet: Fleet) -> str:
    """Every SLO of `fleet` as OpenSLO v1 YAML, one document each, by slug."""
    return documents_text(slo_documents(fleet=fleet))


def slo_documents(*, fleet: Fleet) -> list[dict[str, Any]]:
    slos = Slo.objects.filter(fleet=fleet).select_related("fleet").prefetch_related("objectives")
    return [slo_document(slo) for slo in slos.order_by("slug")]


def documents_text(documents: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(documents, sort_keys=False, allow_unicode=True)


def slo_document(slo: Slo) -> dict[str, Any]:
    annotations = {
        ANNOTATIONS["model_name"]: slo.model_name,
        ANNOTATIONS["instances"]: ",".join(slo.instances),
        ANNOTATIONS["owner"]: slo.owner,
        ANNOTATIONS["runbook_url"]: slo.runbook_url,
        ANNOTATIONS["bad_finish_reasons"]: ",".join(slo.bad_finish_reasons),
        ANNOTATIONS["min_requests_to_page"]: str(slo.min_requests_to_page),
        ANNOTATIONS["min_bad_events"]: str(slo.min_bad_events),
    }
    order = list(OBJECTIVE_KINDS)
    objectives = sorted(slo.objectives.all(), key=lambda o: order.index(o.kind))
    entries: list[dict[str, Any]] = []
    for objective in objectives:
        entry: dict[str, Any] = {"displayName": OBJECTIVE_KINDS[objective.kind].label}
        if objective.threshold_seconds is not None:
            entry |= {"op": "lte", "value": objective.threshold_seconds}
        entry["target"] = objective.target
        entry["indicator"] = _indicator(slo, objective.kind)
        entries.append(entry)
    spec: dict[str, Any] = {"service": slo.fleet.slug}
    if slo.description:
        spec["description"] = slo.description
    spec |= {
        "budgetingMethod": "Occurrences",
        "timeWindow": [{"duration": f"{slo.window_days}d", "isRolling": True}],
    }
    # A lone objective's indicator goes where most OpenSLO tools look for it.
    if len(entries) == 1:
        spec["indicator"] = entries[0].pop("indicator")
    spec["objectives"] = entries
    return {
        "apiVersion": API_VERSION,
        "kind": "SLO",
        "metadata": {"name": slo.slug, "displayName": slo.name, "annotations": annotations},
        "spec": spec,
    }


def _prometheus(query: str) -> dict[str, Any]:
    return {"metricSource": {"type": "Prometheus", "spec": {"query": query}}}


def _indicator(slo: Slo, kind: str) -> dict[str, Any]:
    key = OBJECTIVE_KINDS[kind].key
    name = CATALOG[key].names[0].name
    metadata = {"name": f"{slo.slug}-{kind}", "labels": {KIND_LABEL: kind}}
    if kind in LATENCY_KINDS:
        return {"metadata": metadata, "spec": {"thresholdMetric": _prometheus(f"{name}_bucket")}}
    bad = "|".join(slo.bad_finish_reasons)
    good = f'sum(rate({name}{{finished_reason!~"{bad}"}}[5m]))'
    ratio = {
        "counter": True,
        "good": _prometheus(good),
        "total": _prometheus(f"sum(rate({name}[5m]))"),
    }
    return {"metadata": metadata, "spec": {"ratioMetric": ratio}}


# Import.


def slo_import_text(text: str, *, fleet: Fleet | None = None) -> list[Slo]:
    """Create the SLOs of an OpenSLO file: all of them, or with an OpenSloError none.

    With `fleet`, every document goes to it whatever its `spec.service` says."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise OpenSloError(f"the file is larger than {MAX_BYTES} bytes")
    definitions: list[tuple[str, SloDefinition]] = []
    taken: dict[int, set[str]] = {}
    for number, document in _documents(text):
        label = _label(number, document)
        try:
            found = _definition(document, fleet, taken)
        except _Problem as exc:
            raise OpenSloError(f"{label}: {exc}") from None
        except SloDefinitionError as exc:
            raise OpenSloError(f"{label}: {_path_of(exc.field)}: {exc.detail}") from None
        taken.setdefault(found.fleet.pk, set()).add(found.slug)
        definitions.append((label, found))
    if not definitions:
        raise OpenSloError("the file holds no OpenSLO document")
    created: list[Slo] = []
    with transaction.atomic():
        for label, definition in definitions:
            try:
                created.append(slo_definition_save(definition))
            except SloDefinitionError as exc:
                raise OpenSloError(f"{label}: {_path_of(exc.field)}: {exc.detail}") from None
    return created


def _documents(text: str) -> list[tuple[int, Any]]:
    """(1-based number, parsed document) for each non-empty document of the stream."""
    found: list[tuple[int, Any]] = []
    number = 0
    try:
        for number, document in enumerate(yaml.safe_load_all(text), start=1):
            if number > MAX_DOCUMENTS:
                raise OpenSloError(f"more than {MAX_DOCUMENTS} documents in one file")
            if document is not None:
                found.append((number, document))
    except RecursionError:
        # PyYAML composes nested collections recursively; no SLO nests this deep.
        raise OpenSloError(f"document {number + 1}: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise OpenSloError(f"document {number + 1}: not valid YAML{where}: {problem}") from None
    return found


def _label(number: int, document: Any) -> str:
    name = None
    if isinstance(document, Mapping) and isinstance(document.get("metadata"), Mapping):
        name = document["metadata"].get("name")
    return f"document {number} ({name})" if isinstance(name, str) else f"document {number}"


def _path_of(field: str) -> str:
    match = re.fullmatch(r"objectives\[(\d+)\]\.(\w+)", field)
    if match:
        index, attr = match.groups()
        inner = {"kind": "indicator", "threshold_seconds": "value"}.get(attr, attr)
        return f"spec.objectives[{index}].{inner}"
    return FIELD_PATHS.get(field, field)


def _get(mapping: Mapping[str, Any], key: str, path: str, kind: type | tuple[type, ...]) -> Any:
    value = mapping.get(key)
    if value is None:
        raise _Problem(f"{path}.{key}" if path else key, "missing")
    # YAML's true/false are ints to Python; no field here is a boolean.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _Problem(f"{path}.{key}" if path else key, f"must be {_type_name(kind)}")
    return value


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "a mapping", list: "a list", str: "text", float: "a number", int: "a number"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def _definition(document: Any, fleet: Fleet | None, taken: dict[int, set[str]]) -> SloDefinition:
    if not isinstance(document, Mapping):
        raise _Problem("document", "must be a mapping with apiVersion, kind, metadata and spec")
    version = _get(document, "apiVersion", "", str)
    if version != API_VERSION:
        raise _Problem(
            "apiVersion", f"{version[:40]!r} is not read; FleetScope reads {API_VERSION}"
        )
    kind = _get(document, "kind", "", str)
    if kind != "SLO":
        raise _Problem("kind", f"{kind[:40]!r} documents are not imported; only kind: SLO")
    metadata = _get(document, "metadata", "", dict)
    spec = _get(document, "spec", "", dict)
    slug = _get(metadata, "name", "metadata", str)
    name = metadata.get("displayName") or slug
    annotations = _annotations(metadata)
    if fleet is None:
        try:
            fleet = fleet_get(_get(spec, "service", "spec", str))
        except SloDefinitionError as exc:
            raise _Problem("spec.service", exc.detail) from None
    method = _get(spec, "budgetingMethod", "spec", str)
    if method != "Occurrences":
        raise _Problem(
            "spec.budgetingMethod",
            f"{method[:40]!r} is not supported; FleetScope counts Occurrences",
        )
    return slo_definition_check(
        fleet=fleet,
        name=name,
        slug=slug,
        objectives=_objectives(spec),
        window_days=_window(spec),
        model_name=annotations.get(ANNOTATIONS["model_name"], ""),
        instances=_split(annotations.get(ANNOTATIONS["instances"], "")),
        owner=annotations.get(ANNOTATIONS["owner"], ""),
        runbook_url=annotations.get(ANNOTATIONS["runbook_url"], ""),
        bad_finish_reasons=_split(
            annotations.get(ANNOTATIONS["bad_finish_reasons"], DEFAULT_REASONS)
        ),
        description=spec.get("description") or "",
        min_requests_to_page=_whole(
            annotations, "min_requests_to_page", DEFAULT_MIN_REQUESTS_TO_PAGE
        ),
        min_bad_events=_whole(annotations, "min_bad_events", DEFAULT_MIN_BAD_EVENTS),
        taken_slugs=taken.get(fleet.pk, set()),
    )


def _annotations(metadata: Mapping[str, Any]) -> dict[str, str]:
    given = metadata.get("annotations") or {}
    if not isinstance(given, Mapping):
        raise _Problem("metadata.annotations", "must be a mapping")
    for key, value in given.items():
        if not isinstance(value, str):
            raise _Problem(f"metadata.annotations.{key}", "must be text")
    return dict(given)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _whole(annotations: Mapping[str, str], attr: str, default: int) -> int:
    text = annotations.get(ANNOTATIONS[attr])
    if text is None:
        return default
    if not text.isdigit() or len(text) > 9:
        raise _Problem(f"metadata.annotations.{ANNOTATIONS[attr]}", f"{text[:20]!r} is not a count")
    return int(text)


def _window(spec: Mapping[str, Any]) -> int:
    windows = _get(spec, "timeWindow", "spec", list)
    if len(windows) != 1 or not isinstance(windows[0], Mapping):
        raise _Problem("spec.timeWindow", "must hold exactly one window")
    window = windows[0]
    if window.get("isRolling") is not True:
        raise _Problem("spec.timeWindow[0].isRolling", "FleetScope keeps rolling windows only")
    duration = _get(window, "duration", "spec.timeWindow[0]", str)
    match = DURATION.fullmatch(duration)
    if match is None:
        raise _Problem("spec.timeWindow[0].duration", f"{duration[:20]!r} is not 7d, 28d or 30d")
    return int(match[1]) * (7 if match[2] == "w" else 1)


def _objectives(spec: Mapping[str, Any]) -> list[ObjectiveInput]:
    entries = _get(spec, "objectives", "spec", list)
    if len(entries) > len(OBJECTIVE_KINDS):
        raise _Problem("spec.objectives", f"at most {len(OBJECTIVE_KINDS)}, one per kind")
    if "indicatorRef" in spec:
        raise _Problem(
            "spec.indicatorRef", "SLI references are not supported; inline the indicator"
        )
    shared = spec.get("indicator")
    found = []
    for index, entry in enumerate(entries):
        path = f"spec.objectives[{index}]"
        if not isinstance(entry, Mapping):
            raise _Problem(path, "must be a mapping")
        if "indicatorRef" in entry:
            raise _Problem(f"{path}.indicatorRef", "SLI references are not supported")
        if entry.get("indicator") is not None:
            kind = _indicator_kind(entry["indicator"], f"{path}.indicator")
        elif shared is not None:
            kind = _indicator_kind(shared, "spec.indicator")
        else:
            raise _Problem(f"{path}.indicator", "missing (and no spec.indicator)")
        found.append(ObjectiveInput(kind, _threshold(entry, kind, path), _target(entry, path)))
    return found


def _threshold(entry: Mapping[str, Any], kind: str, path: str) -> float | None:
    if kind not in LATENCY_KINDS:
        if "value" in entry or "op" in entry:
            raise _Problem(f"{path}.value", "a success ratio objective takes no op or value")
        return None
    op = _get(entry, "op", path, str)
    if op != "lte":
        raise _Problem(
            f"{path}.op", f"{op[:10]!r}: latency objectives count values <= value; use lte"
        )
    return float(_get(entry, "value", path, (int, float)))


def _target(entry: Mapping[str, Any], path: str) -> Any:
    if entry.get("targetPercent") is not None:
        percent = _get(entry, "targetPercent", path, (int, float))
        return percent / 100
    return _get(entry, "target", path, (int, float))


def _indicator_kind(indicator: Any, path: str) -> str:
    """The objective kind an inline SLI measures, from FleetScope's label or its query."""
    if not isinstance(indicator, Mapping):
        raise _Problem(path, "must be a mapping with metadata and spec")
    spec = _get(indicator, "spec", path, dict)
    labels = (indicator.get("metadata") or {}).get("labels") or {}
    labelled = labels.get(KIND_LABEL) if isinstance(labels, Mapping) else None
    if "thresholdMetric" in spec:
        names = _names(_query(spec["thresholdMetric"], f"{path}.spec.thresholdMetric"))
        kinds = {KIND_OF_KEY.get(entry_key) for entry_key in names}
        if labelled in LATENCY_KINDS:
            return str(labelled)
        if len(kinds) == 1 and (kind := kinds.pop()) in LATENCY_KINDS:
            return str(kind)
        shown = ", ".join(sorted(names.values())) or "no vLLM latency histogram"
        raise _Problem(path, f"unsupported SLI kind 'thresholdMetric on {shown}'")
    if "ratioMetric" in spec:
        ratio = spec["ratioMetric"]
        if not isinstance(ratio, Mapping):
            raise _Problem(f"{path}.spec.ratioMetric", "must be a mapping")
        if "raw" in ratio:
            raise _Problem(path, "unsupported SLI kind 'RatioMetric with raw source'")
        part = "good" if "good" in ratio else "bad"
        names = {}
        for side in (part, "total"):
            names |= _names(
                _query(
                    _get(ratio, side, f"{path}.spec.ratioMetric", dict),
                    f"{path}.spec.ratioMetric.{side}",
                )
            )
        if labelled == "success" or set(names) == {"request_success"}:
            return "success"
        shown = ", ".join(sorted(names.values())) or "unknown metrics"
        raise _Problem(path, f"unsupported SLI kind 'ratioMetric on {shown}'")
    raise _Problem(path, "unsupported SLI kind: neither thresholdMetric nor ratioMetric")


def _query(metric: Any, path: str) -> str:
    if not isinstance(metric, Mapping):
        raise _Problem(path, "must be a mapping with metricSource")
    source = _get(metric, "metricSource", path, dict)
    source_type = _get(source, "type", f"{path}.metricSource", str)
    if source_type.lower() != "prometheus":
        raise _Problem(
            f"{path}.metricSource.type",
            f"unsupported source {source_type[:40]!r}; FleetScope reads Prometheus names",
        )
    source_spec = _get(source, "spec", f"{path}.metricSource", dict)
    return str(_get(source_spec, "query", f"{path}.metricSource.spec", str))


def _names(query: str) -> dict[str, str]:
    """The catalog keys a PromQL query reads -> the name it reads each under."""
    found: dict[str, str] = {}
    for token in METRIC_NAME.findall(QUOTED.sub('""', query)):
        for name in (
            token,
            *(token.removesuffix(s) for s in HISTOGRAM_SUFFIXES if token.endswith(s)),
        ):
            entry = entry_for_name(name, source_kind="engine")
            if entry is not None:
                found.setdefault(entry.key, name)
    return found
