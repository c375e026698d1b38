"""Autoscalers that query Prometheus, from Kubernetes YAML (multi-document, `kind: List`
too):

- a KEDA `ScaledObject` (or `ScaledJob`): each `type: prometheus` trigger's
  `metadata.query`, its `serverAddress` as the datasource;
- an HPA (`autoscaling/v2`, or `v2beta*`) `type: External` metric: it has no PromQL of its
  own, the prometheus-adapter's rules config serves it (`externalRules`, then `rules`:
  `seriesQuery`, `metricsQuery` with `<<.Series>>`, `<<.LabelMatchers>>`, `<<.GroupBy>>`,
  `name.matches` / `name.as`). The HPA metric is joined to the rule that serves it and the
  item's expression is the rule's `metricsQuery` filled in for that metric; an HPA metric no
  rule serves is an error. The adapter config may be the raw config, a ConfigMap holding
  it (`data["config.yaml"]`) or the Helm chart's values (`rules.custom` / `rules.external`).

Never raises."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blindspots.promql import PromqlError, parse_selectors
from blindspots.sources._load import (
    LoadError,
    checked,
    listed,
    load_yaml_documents,
    mapping,
    text_of,
)
from blindspots.types import Item, ItemError

__all__ = [
    "AdapterRule",
    "autoscaler_documents",
    "autoscalers_from_documents",
    "autoscalers_from_texts",
    "autoscalers_from_yaml",
    "is_autoscaler_document",
]

_KEDA_KINDS = ("ScaledObject", "ScaledJob")
_HPA = "HorizontalPodAutoscaler"
_ADAPTER_KEYS = ("rules", "externalRules", "resourceRules")
_GROUP_REFERENCE = re.compile(r"\$\{?(\d+)\}?")


@dataclass(frozen=True)
class AdapterRule:
    """One prometheus-adapter rule."""

    external: bool  # from `externalRules` (or the chart's `rules.external`)
    number: int  # its position in its list, from 1
    source: str
    series_query: str
    metrics_query: str
    name_matches: str
    name_as: str

    @property
    def where(self) -> str:
        kind = "externalRules" if self.external else "rules"
        return f"prometheus-adapter {kind}[{self.number}] in {self.source}"


def autoscalers_from_yaml(text: str, source: str) -> tuple[list[Item], list[ItemError]]:
    """The autoscaler queries of one YAML file (HPAs joined to adapter rules in it)."""
    return autoscalers_from_texts([(text, source)])


def autoscalers_from_texts(
    texts: Sequence[tuple[str, str]],
) -> tuple[list[Item], list[ItemError]]:
    """Several files read together, (text, source) each: an HPA in one file is joined to
    the adapter rules of another."""
    documents: list[tuple[Any, str]] = []
    errors: list[ItemError] = []
    for text, source in texts:
        try:
            documents += [(doc, source) for doc in autoscaler_documents(load_yaml_documents(text))]
        except LoadError as exc:
            errors.append(ItemError("file", source, source, str(exc)))
    items, more = autoscalers_from_documents(documents)
    return items, errors + more


def autoscaler_documents(documents: Sequence[Any]) -> list[Mapping[str, Any]]:
    """The documents, `kind: List` unpacked."""
    found: list[Mapping[str, Any]] = []
    for doc in documents:
        doc = mapping(doc)
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            found += [mapping(item) for item in listed(doc.get("items"))]
        elif doc:
            found.append(doc)
    return found


def is_autoscaler_document(doc: Any) -> bool:
    """A Kubernetes object or a prometheus-adapter config (not a Prometheus rule file)."""
    doc = mapping(doc)
    if "groups" in doc:
        return False
    return bool(doc.get("kind") and doc.get("apiVersion")) or any(k in doc for k in _ADAPTER_KEYS)


def autoscalers_from_documents(
    documents: Sequence[tuple[Mapping[str, Any], str]],
) -> tuple[list[Item], list[ItemError]]:
    """Loaded documents, (document, source) each."""
    items: list[Item] = []
    errors: list[ItemError] = []
    rules: list[AdapterRule] = []
    hpas: list[tuple[Mapping[str, Any], str]] = []
    for doc, source in documents:
        kind = text_of(doc.get("kind"))
        if kind in _KEDA_KINDS:
            _keda(doc, source, items, errors)
        elif kind == _HPA:
            hpas.append((doc, source))
        else:
            rules += _adapter_rules(doc, source, errors)
    for doc, source in hpas:
        _hpa(doc, source, rules, items, errors)
    good, bad = checked(items)
    return good, errors + bad


def _object_name(doc: Mapping[str, Any]) -> tuple[str, str]:
    meta = mapping(doc.get("metadata"))
    name = text_of(meta.get("name")) or "(unnamed)"
    namespace = text_of(meta.get("namespace"))
    return name, f"{namespace}/{name}" if namespace else name


def _keda(doc: Mapping[str, Any], source: str, items: list[Item], errors: list[ItemError]) -> None:
    kind = text_of(doc.get("kind"))
    name, full = _object_name(doc)
    for number, trigger in enumerate(listed(mapping(doc.get("spec")).get("triggers")), start=1):
        trigger = mapping(trigger)
        if text_of(trigger.get("type")) != "prometheus":
            continue
        where = f"{kind} {full}, trigger {number}"
        if text_of(trigger.get("name")):
            where += f" ({text_of(trigger.get('name'))})"
        meta = mapping(trigger.get("metadata"))
        query = text_of(meta.get("query"))
        if not query.strip():
            errors.append(ItemError("autoscaler", name, where, "the trigger has no `query`"))
            continue
        items.append(
            Item(
                "autoscaler",
                name,
                where,
                query,
                source=source,
                datasource=text_of(meta.get("serverAddress")),
            )
        )


# --- prometheus-adapter --------------------------------------------------------------------


def _adapter_rules(
    doc: Mapping[str, Any], source: str, errors: list[ItemError]
) -> list[AdapterRule]:
    if doc.get("kind") == "ConfigMap":
        found: list[AdapterRule] = []
        for key, text in mapping(doc.get("data")).items():
            if not isinstance(text, str) or not str(key).endswith((".yaml", ".yml")):
                continue
            try:
                inner = load_yaml_documents(text)
            except LoadError as exc:
                _, full = _object_name(doc)
                errors.append(ItemError("file", source, f"ConfigMap {full}, {key}", str(exc)))
                continue
            for config in inner:
                found += _adapter_rules(mapping(config), f"{source} ({key})", errors)
        return found
    rules = doc.get("rules")
    if isinstance(rules, Mapping):  # the Helm chart's values: rules.custom / rules.external
        return _rule_list(listed(rules.get("custom")), False, source) + _rule_list(
            listed(rules.get("external")), True, source
        )
    return _rule_list(listed(rules), False, source) + _rule_list(
        listed(doc.get("externalRules")), True, source
    )


def _rule_list(entries: list[Any], external: bool, source: str) -> list[AdapterRule]:
    rules = []
    for number, entry in enumerate(entries, start=1):
        entry = mapping(entry)
        name = mapping(entry.get("name"))
        rules.append(
            AdapterRule(
                external=external,
                number=number,
                source=source,
                series_query=text_of(entry.get("seriesQuery")),
                metrics_query=text_of(entry.get("metricsQuery")),
                name_matches=text_of(name.get("matches")),
                name_as=text_of(name.get("as")),
            )
        )
    return rules


def _series_names(rule: AdapterRule) -> tuple[str | None, str | None]:
    """The series name the rule's seriesQuery selects, or the `__name__` regex it uses."""
    try:
        selectors = parse_selectors(rule.series_query)
    except PromqlError:
        return None, None
    for selector in selectors:
        if selector.metric:
            return selector.metric, None
        for matcher in selector.matchers:
            if matcher.label == "__name__" and matcher.op == "=~":
                return None, matcher.value
    return None, None


def _full_match(pattern: str, text: str) -> bool:
    try:
        return re.fullmatch(pattern, text) is not None
    except re.error:
        return False


def _rename(rule: AdapterRule, series: str) -> str | None:
    """The metric name the rule serves `series` as (None: the rule does not serve it). As
    the adapter: `matches` defaults to everything, `as` to `$1` with one group, else `$0`."""
    try:
        match = re.search(rule.name_matches or ".*", series)
    except re.error:
        return None
    if match is None:
        return None
    groups = match.re.groups
    template = rule.name_as or ("$1" if groups == 1 else "$0")

    def group(reference: re.Match[str]) -> str:
        index = int(reference.group(1))
        return (match.group(index) or "") if index <= groups else ""

    return _GROUP_REFERENCE.sub(group, template)


def _series_for(rule: AdapterRule, metric: str) -> str | None:
    """The series behind `metric` when `rule` serves it."""
    exact, regex = _series_names(rule)
    if exact is not None:
        return exact if _rename(rule, exact) == metric else None
    if regex is None:
        return None
    candidates = [metric]
    # `matches: ^(.*)_total$` with `as: ${1}_per_second`: undo the rename.
    if rule.name_as and rule.name_matches:
        pattern = re.escape(rule.name_as)
        for escaped in ("\\$\\{1\\}", "\\$1"):
            pattern = pattern.replace(escaped, "(.*)")
        found = re.fullmatch(pattern, metric)
        if found and found.groups():
            core = found.group(1)
            literal = rule.name_matches.strip("^$")
            if literal.count("(.*)") == 1:
                candidates.insert(0, literal.replace("(.*)", core))
    for series in candidates:
        if _full_match(regex, series) and _rename(rule, series) == metric:
            return series
    return None


def _label_matchers(selector: Mapping[str, Any]) -> str:
    parts = [
        f'{key}="{text_of(value)}"' for key, value in mapping(selector.get("matchLabels")).items()
    ]
    for expression in listed(selector.get("matchExpressions")):
        expression = mapping(expression)
        key = text_of(expression.get("key"))
        values = "|".join(re.escape(text_of(v)) for v in listed(expression.get("values")))
        operator = text_of(expression.get("operator"))
        if operator == "In":
            parts.append(f'{key}=~"{values}"')
        elif operator == "NotIn":
            parts.append(f'{key}!~"{values}"')
        elif operator == "Exists":
            parts.append(f'{key}!=""')
        elif operator == "DoesNotExist":
            parts.append(f'{key}=""')
    return ",".join(parts)


def metrics_query_for(rule: AdapterRule, series: str, selector: Mapping[str, Any]) -> str:
    """The rule's metricsQuery filled in as the adapter would for this series and HPA
    selector (no namespace: the group-by is left empty)."""
    query = rule.metrics_query or "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
    return (
        query.replace("<<.Series>>", series)
        .replace("<<.LabelMatchers>>", _label_matchers(selector))
        .replace("<<.GroupBy>>", "")
        .replace("<<.GroupBySlice>>", "")
    )


def _hpa(
    doc: Mapping[str, Any],
    source: str,
    rules: Sequence[AdapterRule],
    items: list[Item],
    errors: list[ItemError],
) -> None:
    name, full = _object_name(doc)
    for number, metric in enumerate(listed(mapping(doc.get("spec")).get("metrics")), start=1):
        metric = mapping(metric)
        if text_of(metric.get("type")) != "External":
            continue
        external = mapping(metric.get("external"))
        identifier = mapping(external.get("metric"))
        metric_name = text_of(identifier.get("name")) or text_of(external.get("metricName"))
        selector = mapping(identifier.get("selector")) or mapping(external.get("metricSelector"))
        where = f"{_HPA} {full}, metric {number} (external {metric_name or '?'})"
        if not metric_name:
            errors.append(ItemError("autoscaler", name, where, "the metric has no name"))
            continue
        if not rules:
            errors.append(
                ItemError(
                    "autoscaler",
                    name,
                    where,
                    f"external metric {metric_name}: no prometheus-adapter rules given, "
                    "so its query is unknown",
                )
            )
            continue
        ordered = [r for r in rules if r.external] + [r for r in rules if not r.external]
        for rule in ordered:
            series = _series_for(rule, metric_name)
            if series is not None:
                items.append(
                    Item(
                        "autoscaler",
                        name,
                        f"{where} via {rule.where}",
                        metrics_query_for(rule, series, selector),
                        source=source,
                    )
                )
                break
        else:
            errors.append(
                ItemError(
                    "autoscaler",
                    name,
                    where,
                    f"external metric {metric_name}: no prometheus-adapter rule serves it",
                )
            )
