"""Prometheus alerting and recording rules: a rule file (YAML, FleetScope's own
`manage.py slo_rules` output among them) or the JSON of `GET /api/v1/rules`.

Never raises: a file that cannot be read is one `ItemError` of kind "file"; a group
without rules, a rule without an expression or with PromQL the parser rejects is an error
of that group or rule, and the other rules are still read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blindspots.sources._load import (
    LoadError,
    checked,
    listed,
    load_json,
    load_yaml,
    mapping,
    text_of,
)
from blindspots.types import Item, ItemError

__all__ = ["RULES_API", "rules_from_api", "rules_from_data", "rules_from_yaml"]

RULES_API = "Prometheus rules API"


def rules_from_yaml(text: str, source: str) -> tuple[list[Item], list[ItemError]]:
    """The rules of a Prometheus rule file; `where` is "group NAME, rule N" (N from 1)."""
    try:
        data = load_yaml(text)
    except LoadError as exc:
        return [], [ItemError("file", source, source, str(exc))]
    return rules_from_data(data, source)


def rules_from_data(data: Any, source: str) -> tuple[list[Item], list[ItemError]]:
    """The rules of an already loaded rule file (`{"groups": [...]}`)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("groups"), list):
        return [], [ItemError("file", source, source, "not a rule file: no `groups` list")]
    items: list[Item] = []
    errors: list[ItemError] = []
    for group_number, group in enumerate(data["groups"], start=1):
        group = mapping(group)
        group_name = text_of(group.get("name")) or f"#{group_number}"
        rules = listed(group.get("rules"))
        if not rules:
            errors.append(
                ItemError("rule", group_name, f"group {group_name}", "the group has no rules")
            )
            continue
        for number, rule in enumerate(rules, start=1):
            where = f"group {group_name}, rule {number}"
            rule = mapping(rule)
            name = text_of(rule.get("alert")) or text_of(rule.get("record"))
            expr = text_of(rule.get("expr"))
            if not name:
                errors.append(
                    ItemError("rule", f"rule {number}", where, "neither `alert` nor `record`")
                )
            elif not expr.strip():
                errors.append(ItemError("rule", name, where, "the rule has no `expr`"))
            else:
                recorded = bool(text_of(rule.get("record")))
                items.append(Item("rule", name, where, expr, source=source, recorded=recorded))
    good, bad = checked(items)
    return good, errors + bad


def rules_from_api(
    payload: Mapping[str, Any] | str | bytes,
) -> tuple[list[Item], list[ItemError]]:
    """The rules of the JSON `GET /api/v1/rules` answers (already decoded, or its body:
    an HTML page or an error status is one error). `where` is "group NAME, rule N"; the
    item's source is the group's file when Prometheus names it."""
    if isinstance(payload, bytes):
        try:
            payload = payload.decode("utf-8")
        except UnicodeDecodeError:
            return [], [ItemError("file", RULES_API, RULES_API, "the body is not UTF-8")]
    if isinstance(payload, str):
        try:
            payload = load_json(payload)
        except LoadError as exc:
            return [], [ItemError("file", RULES_API, RULES_API, str(exc))]
    if not isinstance(payload, Mapping):
        return [], [ItemError("file", RULES_API, RULES_API, "not a rules API answer")]
    if payload.get("status") not in (None, "success"):
        reason = text_of(payload.get("error")) or text_of(payload.get("status"))
        return [], [ItemError("file", RULES_API, RULES_API, f"Prometheus answered: {reason}")]
    groups = mapping(payload.get("data")).get("groups")
    if not isinstance(groups, list):
        return [], [ItemError("file", RULES_API, RULES_API, "no `data.groups` list")]
    items: list[Item] = []
    errors: list[ItemError] = []
    for group_number, group in enumerate(groups, start=1):
        group = mapping(group)
        group_name = text_of(group.get("name")) or f"#{group_number}"
        file = text_of(group.get("file"))
        rules = listed(group.get("rules"))
        if not rules:
            errors.append(
                ItemError("rule", group_name, f"group {group_name}", "the group has no rules")
            )
            continue
        for number, rule in enumerate(rules, start=1):
            rule = mapping(rule)
            where = f"group {group_name}, rule {number}"
            name = text_of(rule.get("name")) or f"rule {number}"
            expr = text_of(rule.get("query"))
            if not expr.strip():
                errors.append(ItemError("rule", name, where, "the rule has no `query`"))
                continue
            recorded = text_of(rule.get("type")) == "recording"
            items.append(
                Item("rule", name, where, expr, source=file or RULES_API, recorded=recorded)
            )
    good, bad = checked(items)
    return good, errors + bad
