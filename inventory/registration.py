"""Registering fleets and endpoints: every URL passes the outbound policy before it is saved."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from inventory.identity import normalised_target
from inventory.models import Endpoint, Fleet, PrometheusSource
from inventory.prometheus import PrometheusError, excerpt, prometheus_active_targets
from inventory.scraping import BlockedByPolicy, policy_refusal
from inventory.services import outbound_policy
from inventory.targets import TargetFileError, TargetSpec, targets_from_prometheus

MAX_LABELS = 32
MAX_LABEL_BYTES = 256


class RegistrationError(ValueError):
    """A target cannot be registered; the message names the target and the reason."""


class DiscoveryError(RegistrationError):
    """Discovery from a Prometheus registered nothing; the one-line message names the
    Prometheus URL and the reason (refused by the policy, unreachable, an error or HTML
    answer, an answer of the wrong shape, or a discovered target that cannot be registered).
    """


@dataclass(frozen=True)
class ImportReport:
    fleet: Fleet
    created: int
    updated: int
    source: PrometheusSource | None = None  # set when the targets were discovered


def endpoint_url_check(url: str) -> None:
    """Raise ValidationError when FleetScope must not send requests to `url`."""
    try:
        outbound_policy().check_url(url)
    except BlockedByPolicy as exc:
        raise ValidationError(f"{url[:200]}: {policy_refusal(exc)}") from None


def endpoint_registered(
    fleet_id: int, url: str, *, exclude_pk: int | None = None
) -> Endpoint | None:
    """The endpoint of the fleet whose target `url` names, however either is spelled."""
    found = Endpoint.objects.filter(fleet_id=fleet_id, target=normalised_target(url))
    if exclude_pk is not None:
        found = found.exclude(pk=exclude_pk)
    return found.select_related("fleet").first()


def duplicate_message(url: str, existing: Endpoint) -> str:
    return (
        f"{url[:200]}: already registered as {existing.url} "
        f"(endpoint {existing.pk}, fleet {existing.fleet.slug})"
    )


def endpoint_identity_check(fleet_id: int, url: str, *, exclude_pk: int | None = None) -> None:
    """Raise ValidationError (on `url`) when the fleet already holds the target `url` names:
    the one check every way of registering an endpoint goes through (the form and the
    admin by Endpoint.clean, imports, discovery, history and the demo by targets_import)."""
    existing = endpoint_registered(fleet_id, url, exclude_pk=exclude_pk)
    if existing is not None:
        raise ValidationError({"url": duplicate_message(url, existing)})


def fleet_slug_clean(slug: str) -> str:
    clean = slugify(slug)
    if not clean:
        raise RegistrationError(f"fleet name {slug[:80]!r} has no usable characters")
    return clean


def fleet_ensure(*, slug: str, name: str | None = None) -> Fleet:
    fleet, _ = Fleet.objects.get_or_create(
        slug=fleet_slug_clean(slug), defaults={"name": name or slug}
    )
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

    A target the fleet already holds under the same URL is updated; under another spelling
    of the same target (see inventory.identity), or listed twice, it is refused, naming the
    endpoint that holds it. With `prune`, endpoints of the fleet that are not in `specs`
    are removed first, so the fleet becomes exactly this list (their history goes with
    them).
    """
    seen: dict[str, str] = {}
    for spec in specs:
        _check_spec(spec)
        target = normalised_target(spec.url)
        if target in seen:
            raise RegistrationError(
                f"{spec.url[:200]}: the same target as {seen[target][:200]}, listed twice"
            )
        seen[target] = spec.url
    created = updated = 0
    with transaction.atomic():
        if fleet is None:
            fleet = fleet_ensure(slug=fleet_slug, name=fleet_name)
        if prune:
            fleet.endpoints.exclude(target__in=list(seen)).delete()
        for spec in specs:
            endpoint = endpoint_registered(fleet.pk, spec.url)
            if endpoint is not None and endpoint.url != spec.url:
                raise RegistrationError(duplicate_message(spec.url, endpoint))
            was_created = endpoint is None
            if endpoint is None:
                endpoint = Endpoint(fleet=fleet, url=spec.url)
            endpoint.kind, endpoint.labels = spec.kind, spec.labels
            try:
                endpoint.full_clean()
            except ValidationError as exc:
                raise RegistrationError(f"{spec.url[:200]}: {'; '.join(exc.messages)}") from None
            endpoint.save()
            created += was_created
            updated += not was_created
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


def prometheus_url_check(url: str) -> str:
    """The base URL of a Prometheus FleetScope may read, normalised without a trailing
    slash; DiscoveryError when the outbound policy refuses it, as it would an endpoint."""
    shown = excerpt(url, 200)  # printable on one line whatever the input
    try:
        target = outbound_policy().check_url(url)
    except BlockedByPolicy as exc:
        raise DiscoveryError(f"{shown}: {policy_refusal(exc)}") from None
    if "?" in target.path:
        # The API path is appended to the base: a query string would swallow it.
        raise DiscoveryError(f"{shown}: a Prometheus base URL takes no query string")
    return target.url.rstrip("/")


def _addresses_check(base_url: str) -> None:
    """What the scraper checks at connect time: every address the host resolves to now
    passes the policy, so a name re-pointed since registration (DNS rebinding) is refused.
    httpx resolves again when it connects; the window between the two is the residual risk."""
    policy = outbound_policy()
    target = policy.check_url(base_url)
    if target.ip is not None:
        return  # a literal address, checked by check_url
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise DiscoveryError(f"{base_url}: cannot resolve host {target.host!r}") from None
    try:
        for info in infos:
            policy.check_address(str(info[4][0]).split("%", 1)[0], target.host)
    except BlockedByPolicy as exc:
        raise DiscoveryError(f"{base_url}: {policy_refusal(exc)}") from None


def _discovered_specs(url: str, *, timeout_seconds: float) -> tuple[str, list[TargetSpec]]:
    """(base URL, its active targets); only GET /api/v1/targets is sent, nothing is saved."""
    base_url = prometheus_url_check(url)
    _addresses_check(base_url)
    try:
        payload = prometheus_active_targets(base_url, timeout_seconds=timeout_seconds)
        return base_url, targets_from_prometheus(payload)
    except PrometheusError as exc:
        raise DiscoveryError(f"{base_url}: {exc}") from exc
    except TargetFileError as exc:
        raise DiscoveryError(f"{base_url}: {exc}") from None


def _discovered_register(
    source: PrometheusSource, base_url: str, specs: list[TargetSpec]
) -> ImportReport:
    try:
        report = targets_import(fleet=source.fleet, specs=specs)
    except RegistrationError as exc:
        raise DiscoveryError(f"{base_url}: discovered target {exc}") from None
    return replace(report, source=source)


def endpoints_discover(*, source: PrometheusSource, timeout_seconds: float) -> ImportReport:
    """Register the active targets a Prometheus source scrapes: all of them or, with a
    DiscoveryError, none."""
    base_url, specs = _discovered_specs(source.url, timeout_seconds=timeout_seconds)
    return _discovered_register(source, base_url, specs)


def prometheus_source_ensure(*, fleet: Fleet, url: str) -> PrometheusSource:
    """The fleet's source for the (normalised) base URL `url`, created if missing; a row
    entered with a trailing slash is the same source."""
    existing = fleet.prometheus_sources.filter(url__in=[url, f"{url}/"]).first()
    if existing is not None:
        return existing
    source, _ = PrometheusSource.objects.get_or_create(
        fleet=fleet, url=url, defaults={"name": urlsplit(url).netloc[:100]}
    )
    return source


def endpoints_discover_from_url(
    *, fleet_slug: str, url: str, timeout_seconds: float, fleet_name: str | None = None
) -> ImportReport:
    """Discover from the Prometheus at `url` into the fleet `fleet_slug`. The fleet and its
    PrometheusSource row for `url` are created (or reused) with the endpoints, in one
    transaction: a DiscoveryError leaves the database as it was."""
    fleet_slug_clean(fleet_slug)  # a bad name fails before anything is asked
    base_url, specs = _discovered_specs(url, timeout_seconds=timeout_seconds)
    with transaction.atomic():
        fleet = fleet_ensure(slug=fleet_slug, name=fleet_name)
        source = prometheus_source_ensure(fleet=fleet, url=base_url)
        return _discovered_register(source, base_url, specs)
