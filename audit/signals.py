"""The signal receivers: each only hands the change to audit.recording.

Signals, not calls in each service: the admin, forms, services, management commands and
imports all save through the ORM, and every one of them is then recorded. A queryset
update() or raw SQL sends no signal; none of the tracked models is changed that way (the
fleet's scrape lease is, and it is skipped anyway)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.apps import apps
from django.db.models import Model
from django.db.models.signals import (
    ModelSignal,
    post_delete,
    post_save,
    pre_delete,
    pre_save,
)

from audit import recording
from audit.tracked import TRACKED, Tracked


def _receivers(spec: Tracked) -> dict[str, tuple[ModelSignal, Callable[..., None]]]:
    def saving(sender: type[Model], instance: Model, using: str, **kwargs: Any) -> None:
        recording.before_save(spec, instance, using)

    def saved(
        sender: type[Model], instance: Model, created: bool, using: str, **kwargs: Any
    ) -> None:
        recording.after_save(
            spec, instance, created=created, update_fields=kwargs.get("update_fields"), using=using
        )

    def deleting(sender: type[Model], instance: Model, **kwargs: Any) -> None:
        recording.before_delete(spec, instance)

    def deleted(sender: type[Model], instance: Model, using: str, **kwargs: Any) -> None:
        recording.after_delete(spec, instance, using)

    return {
        "pre_save": (pre_save, saving),
        "post_save": (post_save, saved),
        "pre_delete": (pre_delete, deleting),
        "post_delete": (post_delete, deleted),
    }


def tracked_models_connect() -> None:
    for spec in TRACKED:
        model = apps.get_model(spec.model)
        for name, (signal, receiver) in _receivers(spec).items():
            signal.connect(
                receiver, sender=model, weak=False, dispatch_uid=f"audit:{spec.object_type}:{name}"
            )
