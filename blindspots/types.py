"""What an audit is made of, shared by its parts: the items read from rules, dashboards and
autoscalers, the vector selectors parsed out of their PromQL, and each selector's verdict
against what the fleet really exposes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

ItemKind = Literal["rule", "panel", "autoscaler"]
# Worst first: an item's verdict is its worst selector's.
Verdict = Literal["blind", "partly blind", "never matched", "suspicious", "live"]
VERDICT_ORDER: tuple[Verdict, ...] = (
    "blind",
    "partly blind",
    "never matched",
    "suspicious",
    "live",
)


@dataclass(frozen=True)
class Item:
    """One thing that reads metrics: an alerting or recording rule, a dashboard panel's
    query, or an autoscaler's trigger query."""

    kind: ItemKind
    name: str  # rule name, panel title, ScaledObject / HPA name
    where: str  # file (or "Prometheus rules API") and position: "group chat, rule 3"
    expr: str  # the PromQL as written, template variables unsubstituted
    source: str = ""  # the file or URL it came from
    datasource: str = ""  # a Grafana panel's datasource as named
    # Template variables the expression may use, with their possible values; an empty tuple
    # means "any value" (the selector then matches only through a wildcard).
    variables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    recorded: bool = False  # a recording rule: its name is a series other items may read


@dataclass(frozen=True)
class ItemError:
    """An item that could not be audited (bad YAML, a non-Prometheus datasource, PromQL the
    parser rejects): reported with the reason; the rest of the audit still runs."""

    kind: ItemKind | Literal["file"]
    name: str
    where: str
    reason: str


@dataclass(frozen=True)
class Matcher:
    label: str
    op: Literal["=", "!=", "=~", "!~"]
    value: str
    from_variable: bool = False  # the value came from a template variable (maybe a wildcard)


@dataclass(frozen=True)
class Selector:
    """One vector selector of an expression."""

    metric: str | None  # None when the name is given only by a `__name__` matcher
    matchers: tuple[Matcher, ...]  # label matchers, `__name__` ones included
    functions: tuple[str, ...]  # the functions wrapping it, innermost first
    text: str  # the selector as it reads in the expression

    @property
    def needs_le(self) -> bool:
        return "histogram_quantile" in self.functions


@dataclass(frozen=True)
class SelectorVerdict:
    selector: Selector
    verdict: Verdict
    why: str  # "vllm:gpu_cache_usage_perc was removed in vLLM 0.10 (renamed ...)"
    expected: tuple[str, ...]  # instances of the kind that should expose it
    matching: tuple[str, ...]  # instances that expose a matching series
    since: datetime | None = None  # when the last of `expected` stopped matching (UTC)
    since_text: str = ""  # "4 of 4 replicas stopped exposing it at ... when upgraded"
    replacement: str | None = None  # the selector rewritten (current name, or `a or b`)
