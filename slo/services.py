"""Writing SLO definitions: every way in (form, admin, preset, OpenSLO import) is checked
here, then an SLO and its objectives are saved together or not at all.

    slo = slo_create(fleet=fleet, name="Chat latency",
                     objectives=[ObjectiveInput("ttft", 0.2, 0.99)])

Bad input raises `SloDefinitionError`, whose `field` names the place
("objectives[1].target") so a form or an importer can point at it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from inventory.models import Endpoint, Fleet
from queries import QueryResult, Scope, resolve_key
from slo.models import (
    DEFAULT_BAD_FINISH_REASONS,
    DEFAULT_MIN_BAD_EVENTS,
    DEFAULT_MIN_REQUESTS_TO_PAGE,
    Objective,
    Slo,
    SloWindow,
)
from slo.objectives import (
    FINISHED_REASONS,
    LATENCY_KINDS,
    MAX_THRESHOLD_SECONDS,
    OBJECTIVE_KINDS,
)
from slo.presets import PRESETS

P = ParamSpec("P")

NAME_MAX = 200
SLUG_MAX = 64
URL_MAX = 500

TARGET_ALL = "a target of 100% leaves no error budget; use at most 99.999%"
TARGET_NONE = "a target of {pct} promises nothing; give a fraction above 0, such as 0.99"
TARGET_OVER = (
    "a target of {pct} is more than 100%; a target is the fraction of events that must be "
    "good, at most 0.99999 (99.999%)"
)
TARGET_NAN = "must be a finite number between 0 and 1 (0.999 for 99.9%), not {value}"
THRESHOLD_NEEDED = "a {kind} objective needs a threshold in seconds"
THRESHOLD_FOR_SUCCESS = "the success objective counts finishes: it takes no threshold"
THRESHOLD_NAN = "must be a finite number of seconds, not {value}"
THRESHOLD_NOT_POSITIVE = "must be more than 0 seconds, not {value:g}"
THRESHOLD_TOO_LARGE = (
    "{value:g} s is more than a day; thresholds are in seconds (0.2 for 200 ms), at most {most:g}"
)
NOT_EXPOSED = "this fleet does not expose {kind}: {why}"


class SloDefinitionError(ValueError):
    """Bad SLO input. `field` is where ("objectives[0].target"), `detail` what is wrong."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


@dataclass(frozen=True)
class ObjectiveInput:
    kind: str  # an ObjectiveKind value
    threshold_seconds: float | None  # None for "success"
    target: float  # fraction of events, 0 < target < 1


@dataclass(frozen=True)
class SloDefinition:
    """An SLO that passed every check, ready for `slo_definition_save`."""

    fleet: Fleet
    slug: str
    name: str
    description: str
    model_name: str
    instances: tuple[str, ...]
    window_days: int
    owner: str
    runbook_url: str
    bad_finish_reasons: tuple[str, ...]
    min_requests_to_page: int
    min_bad_events: int
    objectives: tuple[ObjectiveInput, ...]


def _number(value: object) -> float | None:
    """`value` as a float, or None when it is not a number (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.6g}%"


def objective_check(objective: ObjectiveInput, index: int) -> ObjectiveInput:
    """One objective's kind, threshold and target, on their own; returns it with floats."""
    where = f"objectives[{index}]"
    kind = objective.kind
    if kind not in OBJECTIVE_KINDS:
        known = ", ".join(OBJECTIVE_KINDS)
        raise SloDefinitionError(f"{where}.kind", f"unknown objective kind {kind!r}; use {known}")
    threshold: float | None = None
    if kind in LATENCY_KINDS:
        threshold = _threshold_check(
            objective.threshold_seconds, kind, f"{where}.threshold_seconds"
        )
    elif objective.threshold_seconds is not None:
        raise SloDefinitionError(f"{where}.threshold_seconds", THRESHOLD_FOR_SUCCESS)
    return ObjectiveInput(kind, threshold, _target_check(objective.target, f"{where}.target"))


def _threshold_check(value: object, kind: str, field: str) -> float:
    if value is None:
        raise SloDefinitionError(field, THRESHOLD_NEEDED.format(kind=kind))
    seconds = _number(value)
    if seconds is None or not math.isfinite(seconds):
        raise SloDefinitionError(field, THRESHOLD_NAN.format(value=value))
    if seconds <= 0:
        raise SloDefinitionError(field, THRESHOLD_NOT_POSITIVE.format(value=seconds))
    if seconds > MAX_THRESHOLD_SECONDS:
        raise SloDefinitionError(
            field, THRESHOLD_TOO_LARGE.format(value=seconds, most=MAX_THRESHOLD_SECONDS)
        )
    return seconds


def _target_check(value: object, field: str) -> float:
    target = _number(value)
    if target is None or not math.isfinite(target):
        raise SloDefinitionError(field, TARGET_NAN.format(value=value))
    if target == 1:
        raise SloDefinitionError(field, TARGET_ALL)
    if target > 1:
        raise SloDefinitionError(field, TARGET_OVER.format(pct=_percent(target)))
    if target <= 0:
        raise SloDefinitionError(field, TARGET_NONE.format(pct=_percent(target)))
    return target


def objectives_check(objectives: Sequence[ObjectiveInput]) -> tuple[ObjectiveInput, ...]:
    """At least one objective, at most one of each kind, each sound on its own."""
    if not objectives:
        raise SloDefinitionError("objectives", "give at least one objective")
    checked: list[ObjectiveInput] = []
    seen: dict[str, int] = {}
    for index, objective in enumerate(objectives):
        clean = objective_check(objective, index)
        if clean.kind in seen:
            raise SloDefinitionError(
                f"objectives[{index}].kind",
                f"objectives[{seen[clean.kind]}] is already a {clean.kind} objective; "
                "an SLO holds at most one objective of each kind",
            )
        seen[clean.kind] = index
        checked.append(clean)
    return tuple(checked)


def objectives_exposed_check(
    *,
    fleet: Fleet,
    model_name: str,
    instances: Sequence[str],
    kinds: Sequence[str],
) -> None:
    """Every objective's metric is exposed on the SLO's scope: an SLO over a metric nobody
    serves would read "no data" forever. `kinds` are in objective order."""
    scope = Scope(fleet, model_name=model_name or None, instances=tuple(instances) or None)
    for index, kind in enumerate(kinds):
        key = OBJECTIVE_KINDS[kind].key
        resolved = resolve_key(scope, key)
        if isinstance(resolved, QueryResult):
            # The seam's message starts with the key; the field already says which objective.
            why = (resolved.message or "not exposed").removeprefix(f"{key}: ")
            raise SloDefinitionError(
                f"objectives[{index}].kind", NOT_EXPOSED.format(kind=kind, why=why)
            )


def _text(value: object, field: str, *, most: int | None, required: bool = False) -> str:
    if not isinstance(value, str):
        raise SloDefinitionError(field, f"must be text, not {type(value).__name__}")
    text = value.strip()
    if required and not text:
        raise SloDefinitionError(field, "must not be empty")
    if most is not None and len(text) > most:
        raise SloDefinitionError(field, f"at most {most} characters, not {len(text)}")
    return text


def _window_check(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value not in SloWindow.values:
        days = ", ".join(str(v) for v in SloWindow.values)
        raise SloDefinitionError(
            "window_days", f"{value!r} is not a window FleetScope keeps; use {days} days"
        )
    return value


def bad_finish_reasons_check(value: object) -> tuple[str, ...]:
    """A non-empty list of vLLM finish reasons, in the catalog's order."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SloDefinitionError("bad_finish_reasons", "must be a list of finish reasons")
    given = list(value)
    if not given:
        raise SloDefinitionError(
            "bad_finish_reasons", "give at least one finish reason that counts as bad"
        )
    for reason in given:
        if reason not in FINISHED_REASONS:
            known = ", ".join(FINISHED_REASONS)
            raise SloDefinitionError(
                "bad_finish_reasons", f"{reason!r} is not a vLLM finished_reason; use {known}"
            )
    # One canonical order, so an export and its import compare equal.
    return tuple(reason for reason in FINISHED_REASONS if reason in given)


def instances_check(value: object, fleet: Fleet) -> tuple[str, ...]:
    """host:port strings, each an enabled endpoint of `fleet`, without repeats."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SloDefinitionError("instances", "must be a list of host:port strings")
    given: list[str] = []
    for item in value:
        if not isinstance(item, str) or not item.strip() or any(c.isspace() for c in item.strip()):
            raise SloDefinitionError("instances", f"{item!r} is not a host:port")
        if item.strip() not in given:
            given.append(item.strip())
    if given:
        known = {e.instance for e in Endpoint.objects.enabled().filter(fleet=fleet)}
        for instance in given:
            if instance not in known:
                raise SloDefinitionError(
                    "instances", f"{instance} is not an enabled endpoint of fleet {fleet.slug}"
                )
    return tuple(given)


def _url_check(value: object) -> str:
    url = _text(value, "runbook_url", most=URL_MAX)
    if url:
        try:
            URLValidator(schemes=["http", "https"])(url)
        except ValidationError:
            raise SloDefinitionError("runbook_url", f"{url[:80]!r} is not an http(s) URL") from None
    return url


def _count_check(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SloDefinitionError(field, f"must be a whole number, 0 or more, not {value!r}")
    return value


# Slugs that are pages under /slos/<fleet>/, so an SLO of that name would have no page.
RESERVED_SLUGS = frozenset({"new"})


def slug_check(
    *,
    fleet: Fleet,
    name: str,
    slug: str | None,
    taken: Collection[str] = (),
    exclude_pk: int | None = None,
) -> str:
    """The SLO's slug: `slug`, or one made from the name; free in the fleet and in `taken`."""
    if slug is None or slug == "":
        clean = slugify(name)[:SLUG_MAX].strip("-")
        if not clean:
            raise SloDefinitionError("slug", f"cannot make a slug of {name[:80]!r}; give one")
    else:
        clean = slug
        if not isinstance(slug, str) or slugify(slug) != slug or len(slug) > SLUG_MAX:
            raise SloDefinitionError(
                "slug",
                f"{str(slug)[:80]!r} is not a slug (lower-case letters, digits, - and _, "
                f"at most {SLUG_MAX})",
            )
    if clean in RESERVED_SLUGS:
        raise SloDefinitionError(
            "slug", f"{clean!r} names a page of the fleet's SLOs (/slos/{fleet.slug}/{clean}/); "
            "pick another slug",
        )  # fmt: skip
    others = Slo.objects.filter(fleet=fleet, slug=clean)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    if clean in taken or others.exists():
        raise SloDefinitionError(
            "slug", f"fleet {fleet.slug} already has an SLO {clean!r}; pick another slug"
        )
    return clean


def slo_definition_check(
    *,
    fleet: Fleet,
    name: str,
    slug: str | None = None,
    objectives: Sequence[ObjectiveInput],
    window_days: int = SloWindow.DAYS_28,
    model_name: str = "",
    instances: Sequence[str] = (),
    owner: str = "",
    runbook_url: str = "",
    bad_finish_reasons: Sequence[str] = DEFAULT_BAD_FINISH_REASONS,
    description: str = "",
    min_requests_to_page: int = DEFAULT_MIN_REQUESTS_TO_PAGE,
    min_bad_events: int = DEFAULT_MIN_BAD_EVENTS,
    taken_slugs: Collection[str] = (),
) -> SloDefinition:
    """Every check of an SLO, with nothing written; `taken_slugs` are slugs a batch being
    checked will use. Raises SloDefinitionError at the first problem."""
    clean_name = _text(name, "name", most=NAME_MAX, required=True)
    clean_slug = slug_check(fleet=fleet, name=clean_name, slug=slug, taken=taken_slugs)
    checked = objectives_check(objectives)
    clean_model = _text(model_name, "model_name", most=NAME_MAX)
    clean_instances = instances_check(instances, fleet)
    definition = SloDefinition(
        fleet=fleet,
        slug=clean_slug,
        name=clean_name,
        description=_text(description, "description", most=None),
        model_name=clean_model,
        instances=clean_instances,
        window_days=_window_check(window_days),
        owner=_text(owner, "owner", most=NAME_MAX),
        runbook_url=_url_check(runbook_url),
        bad_finish_reasons=bad_finish_reasons_check(bad_finish_reasons),
        min_requests_to_page=_count_check(min_requests_to_page, "min_requests_to_page"),
        min_bad_events=_count_check(min_bad_events, "min_bad_events"),
        objectives=checked,
    )
    objectives_exposed_check(
        fleet=fleet,
        model_name=clean_model,
        instances=clean_instances,
        kinds=[o.kind for o in checked],
    )
    return definition


def slo_definition_save(definition: SloDefinition) -> Slo:
    """Save a checked definition: the SLO and its objectives, or nothing."""
    slo = Slo(
        fleet=definition.fleet,
        slug=definition.slug,
        name=definition.name,
        description=definition.description,
        model_name=definition.model_name,
        instances=list(definition.instances),
        window_days=definition.window_days,
        owner=definition.owner,
        runbook_url=definition.runbook_url,
        bad_finish_reasons=list(definition.bad_finish_reasons),
        min_requests_to_page=definition.min_requests_to_page,
        min_bad_events=definition.min_bad_events,
    )
    try:
        with transaction.atomic():
            _full_clean(slo)
            slo.save()
            for objective in definition.objectives:
                row = Objective(
                    slo=slo,
                    kind=objective.kind,
                    threshold_seconds=objective.threshold_seconds,
                    target=objective.target,
                )
                _full_clean(row)
                row.save()
    except IntegrityError:
        # Another writer took the slug between the check and the insert.
        raise SloDefinitionError(
            "slug", f"fleet {definition.fleet.slug} already has an SLO {definition.slug!r}"
        ) from None
    return slo


def _full_clean(row: Any) -> None:
    try:
        row.full_clean()
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        raise SloDefinitionError(field, "; ".join(messages)) from None


def _saved(check: Callable[P, SloDefinition]) -> Callable[P, Slo]:
    """`check`'s keywords, checked and saved: one signature for both, so a new field of
    an SLO is added in one place."""

    def create(*args: P.args, **kwargs: P.kwargs) -> Slo:
        return slo_definition_save(check(*args, **kwargs))

    return create


# Check and save one SLO with its objectives, in one transaction (slo_definition_check's
# keywords).
slo_create = _saved(slo_definition_check)


def preset_objectives(preset_key: str) -> tuple[ObjectiveInput, ...]:
    preset = PRESETS.get(preset_key)
    if preset is None:
        raise SloDefinitionError(
            "preset", f"unknown preset {preset_key!r}; use {', '.join(PRESETS)}"
        )
    return tuple(ObjectiveInput(o.kind, o.threshold_seconds, o.target) for o in preset.objectives)


def slo_from_preset(fleet: Fleet, preset_key: str, name: str | None = None) -> Slo:
    """An SLO over the whole fleet with a preset's objectives, named after the preset
    unless `name` is given."""
    objectives = preset_objectives(preset_key)
    return slo_create(
        fleet=fleet,
        name=name or PRESETS[preset_key].name,
        objectives=objectives,
        description=PRESETS[preset_key].why,
    )


def fleet_get(slug: str) -> Fleet:
    """The fleet with this slug, or a SloDefinitionError naming `fleet`."""
    fleet = Fleet.objects.filter(slug=slug).first()
    if fleet is None:
        raise SloDefinitionError("fleet", f"no fleet {slug[:80]!r}")
    return fleet


def slo_for_model(fleet: Fleet, model_name: str) -> Slo | None:
    """The SLO that speaks for one model of a fleet: the one written for the model, else a
    fleet-wide one (first by slug); None when no SLO selects the model."""
    candidates = [
        s for s in fleet.slos.prefetch_related("objectives") if s.model_name in ("", model_name)
    ]
    candidates.sort(key=lambda s: (s.model_name != model_name, s.slug))
    return candidates[0] if candidates else None


def objective_describe(objective: Objective | ObjectiveInput) -> str:
    """One line for people: "ttft <= 0.2 s for 99% of requests"."""
    events = OBJECTIVE_KINDS[objective.kind].events
    share = _percent(objective.target)
    if objective.threshold_seconds is None:
        return f"{objective.kind}: {share} of {events} finish well"
    return f"{objective.kind} <= {objective.threshold_seconds:g} s for {share} of {events}"
