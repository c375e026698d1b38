"""Reading text into data for the sources: JSON and YAML errors as one-line reasons, HTML
bodies recognised, and the PromQL of an item checked (a rejected expression is an error of
that item, not of its file)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import yaml

from blindspots.promql import PromqlError, parse_selectors
from blindspots.types import Item, ItemError, Selector

try:  # the C loader when PyYAML was built with libyaml: a big file reads several times faster
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader


class LoadError(ValueError):
    """The text is not what it should be (malformed, HTML, empty): the reason in one line."""


def looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype", "<html", "<head", "<body", "<?xml")) or (
        head.startswith("<") and "<html" in text[:2000].lower()
    )


def load_json(text: str) -> Any:
    if looks_like_html(text):
        raise LoadError("an HTML page, not JSON")
    if not text.strip():
        raise LoadError("empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoadError(
            f"malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise LoadError("malformed JSON: nested too deeply") from None


def _yaml_reason(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        what = " ".join(part for part in (exc.context, exc.problem) if part)
        return f"malformed YAML: {what} at line {mark.line + 1}, column {mark.column + 1}"
    return f"malformed YAML: {exc}"


def load_yaml_documents(text: str) -> list[Any]:
    """Every document of a (multi-document) YAML stream; raises LoadError on the first
    malformed one (the documents before it are lost: the file is reported as a whole)."""
    if looks_like_html(text):
        raise LoadError("an HTML page, not YAML")
    try:
        return [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise LoadError(_yaml_reason(exc)) from None
    except RecursionError:
        raise LoadError("malformed YAML: nested too deeply") from None


def load_yaml(text: str) -> Any:
    documents = load_yaml_documents(text)
    if not documents:
        raise LoadError("empty")
    if len(documents) > 1:
        raise LoadError(f"{len(documents)} YAML documents where one was expected")
    return documents[0]


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def text_of(value: Any) -> str:
    """A YAML scalar as text (`expr: 1` is the expression `1`); anything else: ""."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, str | int | float):
        return str(value)
    return ""


@lru_cache(maxsize=4096)
def _cached(expr: str, variables: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[Selector, ...]:
    return parse_selectors(expr, dict(variables))


def selectors_of(item: Item) -> tuple[Selector, ...]:
    """The item's selectors (cached: a dashboard repeats its queries); raises PromqlError."""
    variables = tuple(sorted((k, tuple(v)) for k, v in item.variables.items()))
    return _cached(item.expr, variables)


def checked(items: Iterator[Item] | list[Item]) -> tuple[list[Item], list[ItemError]]:
    """Split items into those whose PromQL parses and an error for each of the others."""
    good: list[Item] = []
    bad: list[ItemError] = []
    for item in items:
        try:
            selectors_of(item)
        except PromqlError as exc:
            bad.append(ItemError(item.kind, item.name, item.where, exc.reason))
        else:
            good.append(item)
    return good, bad
