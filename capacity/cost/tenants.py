"""Who used what: tenants defined by rules over what the fleet already exposes.

vLLM has no tenant label, so a tenant is a rule over one of four kinds of evidence:

- `gateway_label`: a label of FleetScope's gateway metrics (`tenant` by default, any other
  label named in `label`), e.g. `fleetscope_gateway_generation_tokens_total{tenant="acme"}`;
- `lora_adapter`: the LoRA adapter name (`adapter` label, from
  `fleetscope_gateway_lora_adapter_info` or `vllm:lora_requests_info`);
- `model_name`: the served model name (a model dedicated to one tenant);
- `replica`: the fleet / replica assignment (`instance` label: engines dedicated to one tenant).

A pattern is an exact value, or a regular expression when written `re:...` (full match).

Precedence, when several rules match one usage row: the most specific evidence wins,
`gateway_label` > `lora_adapter` > `model_name` > `replica` (a gateway label names the
tenant of each request; an adapter names it for the requests that use it; a model or a
replica only says who the capacity is for); then the lower `order`; then the tenant name
(alphabetical), so the outcome never depends on the order rules were listed in.

Nothing is dropped: a row no rule matches is attributed to `UNATTRIBUTED`. `attribute`
also reports the rules that matched nothing and every row two or more rules matched (which
rules, which won, how many tokens were at stake), so overlapping rules are visible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast, get_args

RuleKind = Literal["gateway_label", "lora_adapter", "model_name", "replica"]
Source = Literal["gateway", "engine"]

# Most specific evidence first: the index is the precedence rank.
KIND_PRECEDENCE: tuple[RuleKind, ...] = ("gateway_label", "lora_adapter", "model_name", "replica")
UNATTRIBUTED = "unattributed"
ADAPTER_LABEL = "adapter"
INSTANCE_LABEL = "instance"
REGEX_PREFIX = "re:"


class TenantRuleError(ValueError):
    """A tenant rule that cannot be applied; `field` names the rule's field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class CostInputError(ValueError):
    """A usage or bill input that cannot be costed (negative, NaN, infinite, inconsistent);
    `field` names the input at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def checked_amount(value: float, field: str, where: str = "") -> float:
    """`value` as a float when it is a finite number >= 0, else a `CostInputError`."""
    at = f" ({where})" if where else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CostInputError(field, f"must be a number, got {value!r}{at}")
    if not math.isfinite(value):
        raise CostInputError(field, f"must be finite, got {value!r}{at}")
    if value < 0:
        raise CostInputError(
            field,
            f"must not be negative, got {value!r}{at}; a counter that decreased was reset: "
            "take its increase (as Prometheus' increase() does), not the difference",
        )
    return float(value)


@dataclass(frozen=True)
class TenantRule:
    """`tenant` owns the usage whose evidence of `kind` matches `pattern`.

    For `gateway_label`, `label` names the gateway label read (default "tenant").
    """

    tenant: str
    kind: RuleKind
    pattern: str
    label: str = "tenant"
    order: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.tenant, str) or not self.tenant.strip():
            raise TenantRuleError("tenant", "must not be empty")
        if self.tenant == UNATTRIBUTED:
            raise TenantRuleError("tenant", f"{UNATTRIBUTED!r} is reserved for unclaimed usage")
        if self.kind not in get_args(RuleKind):
            known = ", ".join(KIND_PRECEDENCE)
            raise TenantRuleError("kind", f"unknown kind {self.kind!r}; one of {known}")
        if self.kind == "gateway_label" and (not isinstance(self.label, str) or not self.label):
            raise TenantRuleError("label", "a gateway_label rule needs the label name")
        if isinstance(self.order, bool) or not isinstance(self.order, int):
            raise TenantRuleError("order", f"must be an integer, got {self.order!r}")
        if not isinstance(self.pattern, str) or not self.pattern:
            raise TenantRuleError("pattern", "must not be empty")
        if self.pattern.startswith(REGEX_PREFIX):
            expression = self.pattern.removeprefix(REGEX_PREFIX)
            if not expression:
                raise TenantRuleError("pattern", f"{REGEX_PREFIX!r} needs an expression after it")
            try:
                re.compile(expression)
            except re.error as error:
                raise TenantRuleError("pattern", f"invalid regex {expression!r}: {error}") from None

    @property
    def evidence_label(self) -> str | None:
        """The label of a usage row this rule reads (None: it reads the model name)."""
        return {
            "gateway_label": self.label,
            "lora_adapter": ADAPTER_LABEL,
            "model_name": None,
            "replica": INSTANCE_LABEL,
        }[self.kind]

    @property
    def name(self) -> str:
        """How reports name the rule: `gateway_label tenant="acme" -> acme`."""
        subject = self.evidence_label or "model_name"
        return f'{self.kind} {subject}="{self.pattern}" -> {self.tenant}'

    @property
    def precedence(self) -> tuple[int, int, str]:
        return (KIND_PRECEDENCE.index(self.kind), self.order, self.tenant)

    def matches(self, row: UsageRow) -> bool:
        label = self.evidence_label
        value = row.model_name if label is None else row.labels.get(label)
        if value is None:
            return False
        if self.pattern.startswith(REGEX_PREFIX):  # re caches the compiled expression
            return re.fullmatch(self.pattern.removeprefix(REGEX_PREFIX), value) is not None
        return value == self.pattern


def tenant_rule_check(
    tenant: str, kind: str, pattern: str, label: str = "tenant", order: int = 0
) -> TenantRule:
    """The rule these fields make, or the `TenantRuleError` it would raise (for forms)."""
    if kind not in get_args(RuleKind):
        raise TenantRuleError("kind", f"unknown kind {kind!r}; one of {', '.join(KIND_PRECEDENCE)}")
    return TenantRule(tenant, cast(RuleKind, kind), pattern, label=label, order=order)


@dataclass(frozen=True)
class UsageRow:
    """Usage of one model by one label set over the period (counter increases, >= 0)."""

    model_name: str
    labels: Mapping[str, str]  # e.g. {"tenant": "acme"}, {"adapter": ...}, {"instance": ...}
    requests_ok: float
    requests_failed: float
    prompt_tokens: float
    output_tokens: float
    source: Source = "gateway"

    def __post_init__(self) -> None:
        if not isinstance(self.model_name, str) or not self.model_name:
            raise CostInputError("model_name", "must not be empty")
        if self.source not in get_args(Source):
            raise CostInputError("source", f"must be 'gateway' or 'engine', got {self.source!r}")
        where = self.describe()
        for name in ("requests_ok", "requests_failed", "prompt_tokens", "output_tokens"):
            object.__setattr__(self, name, checked_amount(getattr(self, name), name, where))

    def describe(self) -> str:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.source} {self.model_name}{{{labels}}}"


@dataclass(frozen=True)
class AttributedRow:
    row: UsageRow
    tenant: str  # UNATTRIBUTED when no rule matched
    rule: TenantRule | None  # the rule that won, None when unattributed


@dataclass(frozen=True)
class Overlap:
    """A row two or more rules matched: all of them in precedence order, the first won."""

    row: UsageRow
    rules: tuple[TenantRule, ...]

    @property
    def winner(self) -> TenantRule:
        return self.rules[0]

    @property
    def output_tokens(self) -> float:
        return self.row.output_tokens

    @property
    def tenants_differ(self) -> bool:
        return len({rule.tenant for rule in self.rules}) > 1

    def describe(self) -> str:
        others = "; ".join(rule.name for rule in self.rules[1:])
        return (
            f"{self.row.describe()} ({self.output_tokens:,.0f} output tokens) matched "
            f"{len(self.rules)} rules: {self.winner.name} won over {others}"
        )


@dataclass(frozen=True)
class Attribution:
    rows: tuple[AttributedRow, ...]
    rules: tuple[TenantRule, ...]  # in precedence order
    unmatched_rules: tuple[TenantRule, ...]
    overlaps: tuple[Overlap, ...]

    @property
    def tenants(self) -> tuple[str, ...]:
        """The tenants with usage, alphabetical (UNATTRIBUTED not included)."""
        return tuple(sorted({r.tenant for r in self.rows if r.tenant != UNATTRIBUTED}))

    @property
    def notes(self) -> tuple[str, ...]:
        found = [f"rule {rule.name} matched no usage" for rule in self.unmatched_rules]
        found += [overlap.describe() for overlap in self.overlaps]
        unclaimed = [r.row for r in self.rows if r.tenant == UNATTRIBUTED]
        if unclaimed:
            tokens = sum(row.output_tokens for row in unclaimed)
            found.append(
                f"{len(unclaimed)} usage rows ({tokens:,.0f} output tokens) matched no rule: "
                f"attributed to {UNATTRIBUTED!r}"
            )
        return tuple(found)


def attribute(rows: Iterable[UsageRow], rules: Iterable[TenantRule]) -> Attribution:
    """Each row with its tenant (the matching rule of highest precedence) or UNATTRIBUTED."""
    ordered = tuple(sorted(rules, key=lambda rule: rule.precedence))
    used: set[int] = set()
    attributed: list[AttributedRow] = []
    overlaps: list[Overlap] = []
    for row in rows:
        matching = [(i, rule) for i, rule in enumerate(ordered) if rule.matches(row)]
        used.update(i for i, _ in matching)
        if not matching:
            attributed.append(AttributedRow(row, UNATTRIBUTED, None))
            continue
        winner = matching[0][1]
        attributed.append(AttributedRow(row, winner.tenant, winner))
        if len(matching) > 1:
            overlaps.append(Overlap(row, tuple(rule for _, rule in matching)))
    unmatched = tuple(rule for i, rule in enumerate(ordered) if i not in used)
    return Attribution(tuple(attributed), ordered, unmatched, tuple(overlaps))
