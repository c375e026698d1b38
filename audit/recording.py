"""Writing entries: the row before a save is read in pre_save, compared with what was saved
in post_save, and an entry is added only when a recorded field really changed. A delete is
read in pre_delete (while its fleet and parents still exist) and written in post_delete.

Entries are written by the connection that writes the change, inside its transaction when
there is one (the admin, the services, deletes): a change rolled back takes its entry
with it, and a change that fails writes none.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db.models import DateField, Field, ForeignKey, Model

from audit.actor import current_actor
from audit.models import AuditAction, AuditEntry
from audit.tracked import Tracked
from inventory.models import Fleet

SECRET = "(secret)"
SECRET_CHANGED = [SECRET, "changed"]
# Stashed on the instance between the pre_ and post_ signals of one save or delete.
BEFORE = "_audit_before"
GONE = "_audit_gone"


@functools.cache
def recorded_fields(model: type[Model], spec: Tracked) -> tuple[Field[Any, Any], ...]:
    """The fields a change is read from: not the key, not auto-set timestamps, not derived
    (non-editable) fields, not what the spec skips."""
    fields = []
    for field in model._meta.concrete_fields:
        automatic = isinstance(field, DateField) and (field.auto_now or field.auto_now_add)
        if field.primary_key or automatic or not field.editable or field.name in spec.skipped:
            continue
        fields.append(field)
    return tuple(fields)


def _normalised(field: Field[Any, Any], value: Any) -> Any:
    """The value as the database gives it back, so a form's "2.5" equals a stored 2.5."""
    try:
        return field.to_python(value)
    except (ValidationError, TypeError, ValueError):
        return value


def _values(fields: Iterable[Field[Any, Any]], source: Model | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(source, Model):
        return {f.name: _normalised(f, getattr(source, f.attname)) for f in fields}
    return {f.name: _normalised(f, source[f.attname]) for f in fields}


def json_safe(value: Any) -> Any:
    """Text and numbers a JSON column keeps as they are: decimals as their plain text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    return str(value)


def _shown(instance: Model | None, field: Field[Any, Any], value: Any) -> Any:
    """A value as recorded: a related row by its name (the cached one when it is the
    instance's own), a secret as a mark."""
    if value is None:
        return None
    if isinstance(field, ForeignKey):
        if instance is not None and field.is_cached(instance):
            related = field.get_cached_value(instance)
            if related is not None and related.pk == value:
                return str(related)
        found = field.related_model._base_manager.filter(pk=value).first()
        return str(found) if found is not None else f"#{value}"
    return json_safe(value)


def _snapshot(
    spec: Tracked, instance: Model, values: Mapping[str, Any], fields: Iterable[Field[Any, Any]]
) -> dict[str, Any]:
    return {
        f.name: SECRET if spec.is_secret(f.name) and values[f.name] not in (None, "")
        else _shown(instance, f, values[f.name])
        for f in fields
    }  # fmt: skip


def _placed(spec: Tracked, instance: Model) -> tuple[str, Fleet | None]:
    """(object text, fleet), tolerant of rows a fixture load has not written yet."""
    try:
        text = spec.text_of(instance)
    except ObjectDoesNotExist:
        text = f"#{instance.pk}"
    try:
        fleet = spec.fleet_of(instance)
    except ObjectDoesNotExist:
        fleet = None
    return text[:300], fleet


def _write(
    spec: Tracked,
    *,
    object_id: Any,
    action: str,
    changes: dict[str, Any],
    text: str,
    fleet: Fleet | None,
    fleet_slug: str,
    using: str,
) -> AuditEntry:
    return AuditEntry.objects.using(using).create(
        actor=current_actor(),
        action=action,
        object_type=spec.object_type,
        object_id=str(object_id),
        object_text=text,
        fleet=fleet,
        fleet_slug=fleet_slug,
        changes=changes,
    )


def before_save(spec: Tracked, instance: Model, using: str) -> None:
    before = None
    if instance.pk is not None:
        fields = recorded_fields(type(instance), spec)
        row = (
            type(instance)
            ._base_manager.using(using)
            .filter(pk=instance.pk)
            .values(*(f.attname for f in fields))
            .first()
        )
        before = None if row is None else _values(fields, row)
    instance.__dict__[BEFORE] = before


def after_save(
    spec: Tracked,
    instance: Model,
    *,
    created: bool,
    update_fields: Iterable[str] | None,
    using: str,
) -> AuditEntry | None:
    """The entry for a save that changed something; None for one that changed nothing."""
    before = instance.__dict__.pop(BEFORE, None)
    fields = recorded_fields(type(instance), spec)
    after = _values(fields, instance)
    if created or before is None:
        action = AuditAction.CREATE
        changes = {
            name: [None, value] for name, value in _snapshot(spec, instance, after, fields).items()
        }
    else:
        if update_fields is not None:
            written = set(update_fields)
            fields = tuple(f for f in fields if f.name in written or f.attname in written)
        moved = [f for f in fields if before[f.name] != after[f.name]]
        if not moved:
            return None
        action = AuditAction.UPDATE
        changes = {
            f.name: SECRET_CHANGED if spec.is_secret(f.name)
            else [_shown(None, f, before[f.name]), _shown(instance, f, after[f.name])]
            for f in moved
        }  # fmt: skip
    text, fleet = _placed(spec, instance)
    return _write(
        spec,
        object_id=instance.pk,
        action=action,
        changes=changes,
        text=text,
        fleet=fleet,
        fleet_slug=fleet.slug if fleet is not None else "",
        using=using,
    )


def before_delete(spec: Tracked, instance: Model) -> None:
    fields = recorded_fields(type(instance), spec)
    last = _snapshot(spec, instance, _values(fields, instance), fields)
    text, fleet = _placed(spec, instance)
    instance.__dict__[GONE] = (
        instance.pk,
        {name: [value, None] for name, value in last.items()},
        text,
        fleet,
    )


def after_delete(spec: Tracked, instance: Model, using: str) -> AuditEntry | None:
    gone = instance.__dict__.pop(GONE, None)
    if gone is None:
        return None
    object_id, changes, text, fleet = gone
    if isinstance(instance, Fleet):
        # The fleet's row is gone: its own entry and those its cascade just wrote (after
        # the delete set the older ones' fleet to null) keep only its slug.
        entry = _write(
            spec, object_id=object_id, action=AuditAction.DELETE, changes=changes, text=text,
            fleet=None, fleet_slug=instance.slug, using=using,
        )  # fmt: skip
        AuditEntry.objects.using(using).filter(fleet_id=object_id).update(fleet=None)
        return entry
    return _write(
        spec, object_id=object_id, action=AuditAction.DELETE, changes=changes, text=text,
        fleet=fleet, fleet_slug=fleet.slug if fleet is not None else "", using=using,
    )  # fmt: skip
