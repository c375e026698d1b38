"""Grafana dashboards: every panel query that is PromQL, with where it sits, its
datasource and the dashboard's template variables.

Panels are read at the top level, inside rows (a collapsed row holds its panels; an open
row owns the panels after it), in the old `rows` schema and inside library panels whose
model the JSON carries. One pass over the panels: a 10,000-panel dashboard reads in
linear time. Never raises: malformed JSON is one error of the file; a panel on a
non-Prometheus datasource or a query the parser rejects is an error of that panel."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from blindspots.sources._load import LoadError, checked, listed, load_json, mapping, text_of
from blindspots.types import Item, ItemError

__all__ = ["PROMQL_DATASOURCES", "is_dashboard", "panels_from_dashboard", "panels_from_data"]

# Datasource plugin types whose queries are PromQL.
PROMQL_DATASOURCES = frozenset(
    {
        "prometheus",
        "grafana-amazonprometheus-datasource",
        "grafana-azureprometheus-datasource",
        "victoriametrics-datasource",
        "victoriametrics-metrics-datasource",
    }
)
# Words in a datasource's name that tell its type when only the name is given.
_NAMED_TYPES = (
    ("prometheus", "prometheus"),
    ("mimir", "prometheus"),
    ("thanos", "prometheus"),
    ("cortex", "prometheus"),
    ("victoria", "prometheus"),
    ("loki", "loki"),
    ("elastic", "elasticsearch"),
    ("opensearch", "opensearch"),
    ("influx", "influxdb"),
    ("graphite", "graphite"),
    ("tempo", "tempo"),
    ("jaeger", "jaeger"),
    ("postgres", "postgres"),
    ("mysql", "mysql"),
    ("cloudwatch", "cloudwatch"),
    ("clickhouse", "clickhouse"),
)
_SPECIAL = {"-- grafana --": "grafana", "-- dashboard --": "dashboard", "grafana": "grafana"}
_MIXED = ("-- mixed --", "mixed")
_ALL = frozenset({"$__all", "All", "all"})


@dataclass(frozen=True)
class _Datasource:
    name: str  # as named in the dashboard: a name, a uid, `${DS_PROMETHEUS}`
    type: str  # plugin type; "" when unknown (read as Prometheus), "mixed"


def is_dashboard(data: Any) -> bool:
    """Whether loaded JSON looks like a dashboard (or its provisioning wrapper)."""
    if not isinstance(data, Mapping):
        return False
    if isinstance(data.get("dashboard"), Mapping):
        data = data["dashboard"]
    return any(key in data for key in ("panels", "rows", "templating")) and "groups" not in data


def panels_from_dashboard(text: str, source: str) -> tuple[list[Item], list[ItemError]]:
    """The PromQL queries of a dashboard's panels. `where` reads
    "dashboard TITLE > row ROW > panel TITLE (id N), query A" (", hidden" for a hidden
    query)."""
    try:
        data = load_json(text)
    except LoadError as exc:
        return [], [ItemError("file", source, source, str(exc))]
    return panels_from_data(data, source)


def panels_from_data(data: Any, source: str) -> tuple[list[Item], list[ItemError]]:
    if isinstance(data, Mapping) and isinstance(data.get("dashboard"), Mapping):
        data = data["dashboard"]  # the provisioning / API wrapper
    if not is_dashboard(data):
        return [], [ItemError("file", source, source, "not a Grafana dashboard: no panels")]
    title = text_of(data.get("title")) or source
    variables, datasource_types = _variables(data)
    frozen_variables = MappingProxyType(variables)
    items: list[Item] = []
    errors: list[ItemError] = []
    for row, panel in _panels(data):
        _read_panel(panel, row, title, source, frozen_variables, datasource_types, items, errors)
    good, bad = checked(items)
    return good, errors + bad


# --- panels --------------------------------------------------------------------------------


def _panels(dashboard: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(row title, panel) for every panel holding queries, in dashboard order."""
    for old_row in listed(dashboard.get("rows")):  # the schema before Grafana 5
        old_row = mapping(old_row)
        row_title = text_of(old_row.get("title")) if old_row.get("showTitle", True) else ""
        for panel in listed(old_row.get("panels")):
            yield from _flatten(mapping(panel), row_title)
    row = ""
    for panel in listed(dashboard.get("panels")):
        panel = mapping(panel)
        if panel.get("type") == "row":
            row = text_of(panel.get("title")) or f"(row {text_of(panel.get('id'))})"
            for inner in listed(panel.get("panels")):  # a collapsed row keeps its panels
                yield from _flatten(mapping(inner), row)
            continue
        yield from _flatten(panel, row)


def _flatten(panel: Mapping[str, Any], row: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The panel and any panels nested in it (library panel models, panel groups), without
    recursion so a deep nesting cannot overflow."""
    stack = [panel]
    while stack:
        current = stack.pop()
        yield row, current
        library = mapping(current.get("libraryPanel"))
        model = mapping(library.get("model")) or mapping(current.get("model"))
        if model:
            stack.append(model)
        nested = listed(current.get("panels"))
        stack.extend(mapping(p) for p in reversed(nested))


def _read_panel(
    panel: Mapping[str, Any],
    row: str,
    dashboard: str,
    source: str,
    variables: Mapping[str, tuple[str, ...]],
    datasource_types: Mapping[str, str],
    items: list[Item],
    errors: list[ItemError],
) -> None:
    targets = listed(panel.get("targets"))
    panel_title = text_of(panel.get("title")).strip() or "(untitled)"
    panel_id = text_of(panel.get("id"))
    where = f"dashboard {dashboard}"
    if row:
        where += f" > row {row}"
    where += f" > panel {panel_title}" + (f" (id {panel_id})" if panel_id else "")
    library = mapping(panel.get("libraryPanel"))
    if not targets:
        if library and not mapping(library.get("model")) and not panel.get("model"):
            name = text_of(library.get("name")) or text_of(library.get("uid"))
            errors.append(
                ItemError(
                    "panel",
                    panel_title,
                    where,
                    f"library panel {name}: its queries are not in the dashboard JSON",
                )
            )
        return
    panel_source = _datasource(panel.get("datasource"), datasource_types)
    if panel_source.type not in ("", "mixed") and panel_source.type not in PROMQL_DATASOURCES:
        errors.append(
            ItemError("panel", panel_title, where, f"datasource {panel_source.type}: not PromQL")
        )
        return
    for number, target in enumerate(targets, start=1):
        target = mapping(target)
        ref = text_of(target.get("refId")) or str(number)
        target_where = f"{where}, query {ref}" + (", hidden" if target.get("hide") else "")
        own = target.get("datasource")
        source_here = _datasource(own, datasource_types) if own else panel_source
        if source_here.type == "mixed":
            source_here = _Datasource(source_here.name, "")
        if source_here.type and source_here.type not in PROMQL_DATASOURCES:
            errors.append(
                ItemError(
                    "panel", panel_title, target_where, f"datasource {source_here.type}: not PromQL"
                )
            )
            continue
        expr = text_of(target.get("expr"))
        if not expr.strip():
            continue  # a query left empty, or a non-PromQL query on an unnamed datasource
        items.append(
            Item(
                "panel",
                panel_title,
                target_where,
                expr,
                source=source,
                datasource=source_here.name,
                variables=variables,
            )
        )


def _guess_type(name: str) -> str:
    lowered = name.lower()
    if lowered in _MIXED:
        return "mixed"
    if lowered in _SPECIAL:
        return _SPECIAL[lowered]
    for word, kind in _NAMED_TYPES:
        if word in lowered:
            return kind
    return ""


def _variable_name(text: str) -> str | None:
    if text.startswith("${") and text.endswith("}"):
        return text[2:-1].partition(":")[0]
    if text.startswith("$"):
        return text[1:]
    if text.startswith("[[") and text.endswith("]]"):
        return text[2:-2].partition(":")[0]
    return None


def _datasource(value: Any, datasource_types: Mapping[str, str]) -> _Datasource:
    if value is None or value == "":
        return _Datasource("default", "")
    if isinstance(value, str):
        variable = _variable_name(value)
        if variable is not None:
            return _Datasource(value, datasource_types.get(variable, ""))
        return _Datasource(value, _guess_type(value))
    if isinstance(value, Mapping):
        uid = text_of(value.get("uid"))
        kind = text_of(value.get("type"))
        name = uid or text_of(value.get("name")) or kind or "default"
        variable = _variable_name(kind) if kind else None
        if variable is not None:
            kind = datasource_types.get(variable, "")
        elif not kind and uid:
            uid_variable = _variable_name(uid)
            kind = datasource_types.get(uid_variable, "") if uid_variable else _guess_type(uid)
        if kind == "datasource":  # {"type": "datasource", "uid": "-- Mixed --"}
            kind = _guess_type(uid) or "grafana"
        return _Datasource(name, kind)
    return _Datasource(str(value), "")


# --- template variables --------------------------------------------------------------------


def _values(raw: Any) -> list[str]:
    if isinstance(raw, list):
        return [text_of(v) for v in raw if text_of(v)]
    value = text_of(raw)
    return [value] if value else []


def _custom_values(query: str) -> list[str]:
    """A custom variable's query: "a, b, c" or "label : value" pairs."""
    values = []
    for part in query.split(","):
        part = part.strip()
        if " : " in part:
            part = part.split(" : ", 1)[1].strip()
        if part:
            values.append(part)
    return values


def _variables(
    dashboard: Mapping[str, Any],
) -> tuple[dict[str, tuple[str, ...]], dict[str, str]]:
    """The dashboard's variables with their possible values (empty: any value), and the
    plugin type each datasource variable (or `__inputs` entry) stands for."""
    variables: dict[str, tuple[str, ...]] = {}
    datasource_types: dict[str, str] = {}
    for entry in listed(dashboard.get("__inputs")):  # an exported dashboard's inputs
        entry = mapping(entry)
        if entry.get("type") == "datasource" and text_of(entry.get("name")):
            datasource_types[text_of(entry["name"])] = text_of(entry.get("pluginId"))
    for variable in listed(mapping(dashboard.get("templating")).get("list")):
        variable = mapping(variable)
        name = text_of(variable.get("name"))
        if not name:
            continue
        kind = text_of(variable.get("type"))
        query = variable.get("query")
        query_text = text_of(query) or text_of(mapping(query).get("query"))
        current = mapping(variable.get("current"))
        current_values = _values(current.get("value")) or _values(current.get("text"))
        options = [
            text_of(mapping(o).get("value")) or text_of(mapping(o).get("text"))
            for o in listed(variable.get("options"))
        ]
        options = [o for o in options if o and o not in _ALL]
        if kind == "datasource":
            datasource_types[name] = query_text.lower()
            variables[name] = tuple(current_values)
            continue
        if variable.get("includeAll") or any(v in _ALL for v in current_values):
            variables[name] = ()  # "All": any value
            continue
        if kind in ("custom", "interval") and not options:
            options = _custom_values(query_text)
        elif kind in ("constant", "textbox") and not options and query_text:
            options = [query_text]
        values = options or current_values
        variables[name] = tuple(dict.fromkeys(values))
    return variables, datasource_types
