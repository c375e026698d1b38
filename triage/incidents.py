"""Incident services: open, note, acknowledge, resolve, walk (now or after commit), and the
Alertmanager batch. Every write happens here; views, the admin's actions and the webhook
call these."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, close_old_connections, transaction
from django.http import Http404
from django.utils import timezone

from fleetscope.lib.utc import utc_text
from inventory.access import fleet_for_user
from inventory.models import Fleet
from slo.models import Slo
from triage.models import (
    EventKind,
    Incident,
    IncidentEvent,
    IncidentSeverity,
    IncidentSource,
    IncidentStatus,
    Runbook,
    WalkDelivery,
    WalkRecord,
)
from triage.runbooks import LEAVES, runbook_slug
from triage.webhook import AlertBatch, AlertIn, AlertPayloadError

if TYPE_CHECKING:
    from triage.walk.types import Walk

    WalkFunction = Callable[..., Walk]

log = logging.getLogger(__name__)

ALERTMANAGER = "alertmanager"
NOTE_EMPTY = "a note needs some text"
NOTE_TOO_LONG = "a note is at most 10000 characters"
SLO_OF_OTHER_FLEET = "SLO {slo} belongs to fleet {other}, not {fleet}"
UNKNOWN_FLEET = "alerts[{i}]: no fleet {slug!r} in FleetScope (from its fleet label)"
ALREADY_RESOLVED = "incident #{id} is already resolved"
# Alertmanager's severities from FleetScope's exported rules (page, ticket) and the usual ones.
SEVERITIES = {
    "page": IncidentSeverity.CRITICAL,
    "ticket": IncidentSeverity.WARNING,
    "critical": IncidentSeverity.CRITICAL,
    "warning": IncidentSeverity.WARNING,
    "info": IncidentSeverity.INFO,
}
# The walk reads at least this far back, and at most this much of a long breach.
WALK_SINCE_MIN = timedelta(minutes=30)
WALK_SINCE_MAX = timedelta(hours=6)


class IncidentError(ValueError):
    """A write that cannot be done as asked; the message says why."""


def _event(incident: Incident, kind: str, text: str, *, author: str = "", **more: Any) -> None:
    IncidentEvent.objects.create(incident=incident, kind=kind, text=text, author=author, **more)


@transaction.atomic
def incident_open(
    *,
    fleet: Fleet,
    title: str,
    slo: Slo | None = None,
    started_at: datetime | None = None,
    source: str = IncidentSource.MANUAL,
    owner: str = "",
    severity: str = IncidentSeverity.WARNING,
    runbook: Runbook | None = None,
    author: str = "",
    alert_fingerprint: str = "",
    alert_labels: Mapping[str, str] | None = None,
    alert_annotations: Mapping[str, str] | None = None,
) -> Incident:
    """A new open incident with an "opened" line in its timeline. Raises ValidationError."""
    if slo is not None and slo.fleet_id != fleet.pk:
        raise ValidationError(SLO_OF_OTHER_FLEET.format(slo=slo, other=slo.fleet, fleet=fleet))
    incident = Incident(
        fleet=fleet,
        slo=slo,
        title=title.strip()[:300],
        started_at=started_at,
        source=source,
        owner=owner.strip(),
        severity=severity,
        runbook=runbook,
        alert_fingerprint=alert_fingerprint,
        alert_labels=dict(alert_labels or {}),
        alert_annotations=dict(alert_annotations or {}),
    )
    incident.full_clean()
    incident.save()
    via = "by Alertmanager" if source == IncidentSource.ALERTMANAGER else "by hand"
    _event(incident, EventKind.STATUS, f"Opened {via}.", author=author)
    return incident


def incident_note(*, incident: Incident, author: str, text: str) -> IncidentEvent:
    text = text.strip()
    if not text:
        raise IncidentError(NOTE_EMPTY)
    if len(text) > 10_000:
        raise IncidentError(NOTE_TOO_LONG)
    return IncidentEvent.objects.create(
        incident=incident, kind=EventKind.NOTE, author=author, text=text
    )


@transaction.atomic
def incident_acknowledge(*, incident: Incident, author: str, owner: str = "") -> Incident:
    """Open -> acknowledged; the acknowledging person becomes the owner unless one is set."""
    if incident.is_resolved:
        raise IncidentError(ALREADY_RESOLVED.format(id=incident.pk))
    incident.status = IncidentStatus.ACKNOWLEDGED
    incident.owner = owner.strip() or incident.owner or author
    incident.save(update_fields=["status", "owner"])
    _event(incident, EventKind.STATUS, f"Acknowledged; owner {incident.owner}.", author=author)
    return incident


@transaction.atomic
def incident_resolve(
    *, incident: Incident, author: str, resolved_at: datetime | None = None, reason: str = ""
) -> Incident:
    if incident.is_resolved:
        raise IncidentError(ALREADY_RESOLVED.format(id=incident.pk))
    incident.status = IncidentStatus.RESOLVED
    incident.resolved_at = resolved_at or timezone.now()
    incident.save(update_fields=["status", "resolved_at"])
    _event(incident, EventKind.STATUS, f"Resolved. {reason}".strip(), author=author)
    return incident


@transaction.atomic
def incident_reopen(*, incident: Incident, author: str, reason: str = "") -> Incident:
    incident.status = IncidentStatus.OPEN
    incident.resolved_at = None
    incident.save(update_fields=["status", "resolved_at"])
    _event(incident, EventKind.STATUS, f"Reopened. {reason}".strip(), author=author)
    return incident


def _json_safe(value: Any) -> Any:
    """`value` with NaN and infinities as None: PostgreSQL's jsonb refuses them, and a gap
    in the evidence is better written as null than lost with the whole walk."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


@transaction.atomic
def incident_walk_record(incident: Incident, walk: Walk, *, author: str = "") -> WalkRecord:
    """Freeze `walk` as the incident's evidence, with a timeline line naming what it found.
    The walk's first supported leaf links that leaf's runbook, unless a runbook of the
    team's own (not a leaf's) is linked."""
    record = WalkRecord.objects.create(incident=incident, walk=_json_safe(walk.to_dict()))
    supported = list(walk.supported)
    found = ", ".join(supported) if supported else "no supported cause"
    _event(
        incident, EventKind.WALK, f"Walked the tree: {found}.", author=author, walk_record=record
    )
    # The runbook follows the newest walk's cause, unless someone linked one of their own
    # (a runbook that is not a leaf's): a later walk over the right window corrects an
    # earlier one read too early.
    current = incident.runbook.slug if incident.runbook is not None else None
    leaf_runbooks = {runbook_slug(leaf) for leaf in LEAVES}
    if supported and (current is None or current in leaf_runbooks):
        slug = walk.node(supported[0]).runbook or runbook_slug(supported[0])
        runbook = Runbook.objects.filter(slug=slug).first()
        if runbook is not None and runbook.slug != current:
            incident.runbook = runbook
            incident.save(update_fields=["runbook"])
    return record


def walk_function() -> WalkFunction:
    """triage.walk.walk_fleet, imported when first needed (the walk imports the query seam
    and numpy; the webhook and the pages should not pay for that at start-up)."""
    from triage.walk import walk_fleet

    return walk_fleet


def walk_backend() -> str:
    return "prometheus" if settings.PROMETHEUS_URL else "local"


def walk_since(incident: Incident, now: datetime) -> timedelta:
    """How far back the walk reads: the breach from its start, within bounds."""
    if incident.started_at is None:
        return WALK_SINCE_MIN
    return min(max(now - incident.started_at, WALK_SINCE_MIN), WALK_SINCE_MAX)


def incident_walk_run(incident_id: int, *, author: str = "") -> WalkRecord | None:
    """Walk the tree for the incident now and store the walk; None when it could not run,
    with a timeline line that says why (the incident stays as it was)."""
    incident = Incident.objects.select_related("fleet", "slo").filter(pk=incident_id).first()
    if incident is None:
        return None  # deleted since it was queued
    now = timezone.now()
    try:
        walk = walk_function()(
            incident.fleet,
            slo=incident.slo,
            at=now,
            since=walk_since(incident, now),
            backend=walk_backend(),
        )
    except Exception as exc:
        # A failing walk must not lose the incident: the timeline says what went wrong.
        log.exception("walk for incident %s failed", incident_id)
        text = f"The walk could not run: {type(exc).__name__}: {str(exc)[:300]}"
        _event(incident, EventKind.WALK, text, author=author)
        return None
    return incident_walk_record(incident, walk, author=author)


# With acks_late and reject_on_worker_lost, Celery hands back a walk whose worker process
# died (the kernel's OOM killer on a huge fleet, a crash in a native library): without a
# bound, that walk would be delivered, and kill its process, forever, holding a worker
# slot and querying Prometheus each time. Three deliveries tell a one-off from a pattern.
WALK_DELIVERIES_MAX = 3


def incident_walk_delivered(incident_id: int, task_id: str | None) -> WalkRecord | None:
    """A queued walk as the broker delivers it (`task_id`: the same on every delivery).
    Each delivery is counted, committed before the walk starts; a delivery past
    WALK_DELIVERIES_MAX, or of a walk that already ran to its end, walks nothing, and the
    first one past the bound says in the timeline that the walk was abandoned."""
    if task_id is None:  # called directly, not through a broker: nothing to count
        return incident_walk_run(incident_id, author=ALERTMANAGER)
    with transaction.atomic():
        incident = Incident.objects.select_for_update().filter(pk=incident_id).first()
        if incident is None:
            return None  # deleted since it was queued
        delivery, _ = WalkDelivery.objects.get_or_create(task_id=task_id, incident=incident)
        if delivery.finished_at is not None:
            return None  # it ran; only the acknowledgement was lost
        delivery.attempts += 1
        delivery.save(update_fields=["attempts"])
        if delivery.attempts == WALK_DELIVERIES_MAX + 1:
            log.error(
                "walk task %s for incident %s abandoned after %d deliveries",
                task_id, incident_id, WALK_DELIVERIES_MAX,
            )  # fmt: skip
            first = utc_text(delivery.first_at)
            _event(
                incident, EventKind.WALK,
                f"The queued walk was abandoned: it was delivered {WALK_DELIVERIES_MAX} times "
                f"(first at {first}) and its worker process died each time before it ended. "
                "Find why (a worker's memory limit, for one), then walk again by hand.",
                author=ALERTMANAGER,
            )  # fmt: skip
    if delivery.attempts > WALK_DELIVERIES_MAX:
        return None
    record = incident_walk_run(incident_id, author=ALERTMANAGER)
    WalkDelivery.objects.filter(pk=delivery.pk).update(finished_at=timezone.now())
    return record


def _walk_in_thread(incident_id: int) -> None:
    try:
        incident_walk_run(incident_id, author=ALERTMANAGER)
    finally:
        close_old_connections()  # this thread's connection is not request-scoped


def _walk_thread_start(incident_id: int) -> None:
    threading.Thread(
        target=_walk_in_thread, args=(incident_id,), name="fleetscope-walk", daemon=True
    ).start()


def incident_walk_enqueue(incident: Incident) -> None:
    """Walk the incident once the current transaction commits: a Celery task in production,
    a short-lived thread beside the web server in the embedded mode (no worker there).

    A broker that is down must not lose the walk, nor turn the webhook's answer into a 500
    after the incident is committed (Alertmanager's retry would then find the incident and
    queue nothing): the walk then runs in a thread of this process, as in the embedded mode.
    """
    incident_id = incident.pk

    def enqueue() -> None:
        if settings.FLEETSCOPE_INPROCESS_SCHEDULER:
            _walk_thread_start(incident_id)
            return
        from kombu.exceptions import OperationalError as BrokerError

        from fleetscope.lib.redis_settings import REDIS_ERRORS
        from triage.tasks import walk_incident as walk_incident_task

        broker_errors: tuple[type[Exception], ...] = (BrokerError, *REDIS_ERRORS)
        try:
            walk_incident_task.delay(incident_id)
        except broker_errors as exc:
            log.warning(
                "walk of incident %s not queued (broker unreachable: %s); walking it in this "
                "process instead",
                incident_id,
                type(exc).__name__,
            )
            _walk_thread_start(incident_id)

    transaction.on_commit(enqueue)


@dataclass
class AlertReceipt:
    """What one webhook call did, alert by alert (in payload order)."""

    outcomes: list[tuple[str, int | None]] = field(default_factory=list)  # (outcome, incident)

    def count(self, outcome: str) -> int:
        return sum(1 for done, _ in self.outcomes if done == outcome)

    def to_dict(self) -> dict[str, Any]:
        return {
            "alerts": [{"outcome": done, "incident": pk} for done, pk in self.outcomes],
            **{name: self.count(name) for name in ("opened", "updated", "resolved", "ignored")},
        }


@transaction.atomic
def alert_receive(batch: AlertBatch) -> AlertReceipt:
    """Apply an Alertmanager batch, all or nothing: a bad alert anywhere (an unknown fleet)
    raises AlertPayloadError and writes nothing. Replaying a batch changes nothing."""
    fleets: dict[str, Fleet] = {}
    for i, alert in enumerate(batch.alerts):
        if alert.fleet_slug not in fleets:
            try:
                fleets[alert.fleet_slug] = fleet_for_user(None, slug=alert.fleet_slug)
            except Http404:
                raise AlertPayloadError(
                    UNKNOWN_FLEET.format(i=i, slug=alert.fleet_slug[:64])
                ) from None
    receipt = AlertReceipt()
    for alert in batch.alerts:
        receipt.outcomes.append(_alert_apply(alert, fleets[alert.fleet_slug]))
    return receipt


def _alert_apply(alert: AlertIn, fleet: Fleet) -> tuple[str, int | None]:
    incidents = Incident.objects.select_for_update().filter(
        fleet=fleet, alert_fingerprint=alert.fingerprint
    )
    incident = incidents.first()
    if incident is None:
        if alert.status == "resolved":
            return "ignored", None  # resolved before FleetScope heard of it
        try:
            with transaction.atomic():  # a savepoint: a concurrent delivery may win the race
                incident = _alert_open(alert, fleet)
        except IntegrityError:
            incident = incidents.get()
        else:
            incident_walk_enqueue(incident)
            return "opened", incident.pk
    if alert.status == "resolved":
        if incident.is_resolved:
            return "ignored", incident.pk
        incident_resolve(
            incident=incident, author=ALERTMANAGER, resolved_at=alert.ends_at, reason="Alert ended."
        )
        return "resolved", incident.pk
    if incident.is_resolved:
        assert incident.resolved_at is not None
        if alert.starts_at <= incident.resolved_at:
            return "ignored", incident.pk  # a replay of the firing that was resolved since
        incident.started_at = alert.starts_at
        incident.save(update_fields=["started_at"])
        incident_reopen(incident=incident, author=ALERTMANAGER, reason="The alert fired again.")
        incident_walk_enqueue(incident)
        return "opened", incident.pk
    if (incident.alert_labels, incident.alert_annotations) == (alert.labels, alert.annotations):
        return "ignored", incident.pk
    incident.alert_labels, incident.alert_annotations = alert.labels, alert.annotations
    incident.save(update_fields=["alert_labels", "alert_annotations"])
    _event(incident, EventKind.ALERT, "Alert labels or annotations changed.", author=ALERTMANAGER)
    return "updated", incident.pk


def _alert_open(alert: AlertIn, fleet: Fleet) -> Incident:
    labels, annotations = alert.labels, alert.annotations
    slo = Slo.objects.filter(fleet=fleet, slug=alert.slo_slug).first() if alert.slo_slug else None
    name = labels.get("alertname", "Alert")
    return incident_open(
        fleet=fleet,
        slo=slo,
        title=annotations.get("summary") or f"{name} on {fleet.slug}",
        started_at=alert.starts_at,
        source=IncidentSource.ALERTMANAGER,
        severity=SEVERITIES.get(labels.get("severity", ""), IncidentSeverity.WARNING),
        author=ALERTMANAGER,
        alert_fingerprint=alert.fingerprint,
        alert_labels=labels,
        alert_annotations=annotations,
    )
