"""Registering fleets and endpoints: every URL passes the outbound policy before it is saved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from inventory.models import Endpoint, Fleet, PrometheusSource
from inventory.prometheus import prometheus_active_targets
from inventory.scraping import BlockedByPolicy
from inventory.services import outbound_policy
from inventory.targets import TargetSpec, targets_from_prometheus

MAX_LABELS = 32
MAX_LABEL_BYTES = 256


class RegistrationError(ValueError):
    """A target cannot be registered; the message names the target and the reason."""


@dataclass(frozen=True)
class ImportReport:
    fleet: Fleet
    created: int
    updated: int


def endpoint_url_check(url: str) -> None:
    """Raise ValidationError when FleetScope must not send requests to `url`."""
    try:
        outbound_policy().check_url(url)
    except BlockedByPolicy as exc:
        raise ValidationError(f"{url[:200]}: blocked by policy: {exc.reason}") from None


def fleet_ensure(*, slug: str, name: str | None = None) -> Fleet:
    clean = slugify(slug)
    if not clean:
        raise RegistrationError(f"fleet name {slug[:80]!r} has no usable characters")
    fleet, _ = Fleet.objects.get_or_create(slug=clean, defaults={"name": name or slug})
    return fleet


def targets_import(
    *,
    fleet: Fleet | None = None,
    fleet_slug: str = "",
    fleet_name: str | None = None,
    specs: Sequence[TargetSpec],
    prune: bool = False,
) -> ImportReport:
    """Register every target or none: one bad target rejects the whole import (and the fleet).

    With `prune`, endpoints of the fleet that are not in `specs` are removed, so
    the fleet becomes exactly this list (their history goes with them).
    """
    for spec in specs:
        _check_spec(spec)
    created = updated = 0
    with transaction.atomic():
        if fleet is None:
            fleet = fleet_ensure(slug=fleet_slug, name=fleet_name)
        for spec in specs:
            endpoint, was_created = Endpoint.objects.update_or_create(
                fleet=fleet, url=spec.url, defaults={"kind": spec.kind, "labels": spec.labels}
            )
            try:
                endpoint.full_clean()
            except ValidationError as exc:
                raise RegistrationError(f"{spec.url[:200]}: {'; '.join(exc.messages)}") from None
            created += was_created
            updated += not was_created
        if prune:
            fleet.endpoints.exclude(url__in=[spec.url for spec in specs]).delete()
    return ImportReport(fleet, created, updated)


def _check_spec(spec: TargetSpec) -> None:
    try:
        endpoint_url_check(spec.url)
    except ValidationError as exc:
        raise RegistrationError(exc.messages[0]) from None
    if len(spec.labels) > MAX_LABELS:
        raise RegistrationError(f"{spec.url[:200]}: more than {MAX_LABELS} labels")
    for key, value in spec.labels.items():
        if len(key.encode()) > MAX_LABEL_BYTES or len(value.encode()) > MAX_LABEL_BYTES:
            raise RegistrationError(f"{spec.url[:200]}: label {key[:40]!r} is too long")


def endpoints_discover(*, source: PrometheusSource, timeout_seconds: float) -> ImportReport:
    """Register the active targets a Prometheus source scrapes."""
    payload = prometheus_active_targets(source.url, timeout_seconds=timeout_seconds)
    return targets_import(fleet=source.fleet, specs=targets_from_prometheus(payload))
