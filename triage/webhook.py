"""The Alertmanager webhook's input: the bearer token, and the v4 payload read into typed
alerts. Every shape error names the field it found wrong (`alerts[2].labels: ...`), so the
person wiring Alertmanager sees what to fix in its log. Writing is triage.incidents'."""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

AlertStatus = Literal["firing", "resolved"]

# Labels that name the FleetScope fleet, most specific first.
FLEET_LABELS = ("fleetscope_fleet", "fleet")
SLO_LABELS = ("fleetscope_slo", "slo")
MAX_ALERTS = 1000
MAX_FINGERPRINT = 64

NOT_JSON = "the body is not JSON: {error}"
NOT_OBJECT = "the payload must be a JSON object (Alertmanager webhook v4)"
BAD_VERSION = 'version must be "4" (Alertmanager webhook payload v4), got {value}'
NO_ALERTS = "alerts must be a list of alert objects"
TOO_MANY = f"at most {MAX_ALERTS} alerts per payload"
ALERT_NOT_OBJECT = "alerts[{i}] must be an object"
BAD_STATUS = 'alerts[{i}].status must be "firing" or "resolved", got {value}'
BAD_MAPPING = "alerts[{i}].{name} must be an object of string values"
BAD_TIME = "alerts[{i}].{name} must be an RFC 3339 time with a zone, got {value}"
BAD_FINGERPRINT = (
    f"alerts[{{i}}].fingerprint must be a non-empty string of at most {MAX_FINGERPRINT} characters"
)
NO_FLEET = (
    "alerts[{i}] has no fleet: add the label fleet (or fleetscope_fleet) naming a FleetScope "
    "fleet's slug to the alerting rule"
)


class AlertPayloadError(ValueError):
    """The payload cannot be used; the message says which field and why."""


@dataclass(frozen=True)
class AlertIn:
    status: AlertStatus
    fingerprint: str
    fleet_slug: str
    starts_at: datetime
    ends_at: datetime | None  # None while firing (Alertmanager sends the zero time)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def slo_slug(self) -> str:
        return next((self.labels[k] for k in SLO_LABELS if self.labels.get(k)), "")


@dataclass(frozen=True)
class AlertBatch:
    group_key: str
    status: str
    alerts: tuple[AlertIn, ...]


def bearer_token_matches(authorization: str | None, token: str) -> bool:
    """Whether the Authorization header carries `Bearer <token>`; compared in constant time."""
    if not token or not authorization:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def alert_payload_parse(body: bytes) -> AlertBatch:
    """The alerts of an Alertmanager v4 webhook body; raises AlertPayloadError."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AlertPayloadError(NOT_JSON.format(error=str(exc)[:120])) from None
    if not isinstance(payload, dict):
        raise AlertPayloadError(NOT_OBJECT)
    if payload.get("version") != "4":
        raise AlertPayloadError(BAD_VERSION.format(value=_shown(payload.get("version"))))
    alerts = payload.get("alerts")
    if not isinstance(alerts, list):
        raise AlertPayloadError(NO_ALERTS)
    if len(alerts) > MAX_ALERTS:
        raise AlertPayloadError(TOO_MANY)
    common = payload.get("commonLabels")
    common_labels = common if isinstance(common, dict) else {}
    return AlertBatch(
        group_key=str(payload.get("groupKey", ""))[:500],
        status=str(payload.get("status", ""))[:16],
        alerts=tuple(_alert(i, alert, common_labels) for i, alert in enumerate(alerts)),
    )


def _alert(i: int, raw: Any, common_labels: Mapping[str, Any]) -> AlertIn:
    if not isinstance(raw, dict):
        raise AlertPayloadError(ALERT_NOT_OBJECT.format(i=i))
    status = raw.get("status")
    if status not in ("firing", "resolved"):
        raise AlertPayloadError(BAD_STATUS.format(i=i, value=_shown(status)))
    labels = _strings(i, "labels", raw.get("labels"))
    annotations = _strings(i, "annotations", raw.get("annotations", {}))
    fingerprint = raw.get("fingerprint")
    if not isinstance(fingerprint, str) or not 0 < len(fingerprint) <= MAX_FINGERPRINT:
        raise AlertPayloadError(BAD_FINGERPRINT.format(i=i))
    fleet = next((labels[k] for k in FLEET_LABELS if labels.get(k)), "")
    if not fleet:
        # The group's common labels are every alert's labels too; read them only as a fallback.
        fleet = next((str(common_labels[k]) for k in FLEET_LABELS if common_labels.get(k)), "")
    if not fleet:
        raise AlertPayloadError(NO_FLEET.format(i=i))
    starts_at = _time(i, "startsAt", raw.get("startsAt"))
    if starts_at is None:
        raise AlertPayloadError(BAD_TIME.format(i=i, name="startsAt", value="the zero time"))
    return AlertIn(
        status=status,
        fingerprint=fingerprint,
        fleet_slug=fleet,
        starts_at=starts_at,
        ends_at=_time(i, "endsAt", raw.get("endsAt")),
        labels=labels,
        annotations=annotations,
    )


def _strings(i: int, name: str, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise AlertPayloadError(BAD_MAPPING.format(i=i, name=name))
    return dict(value)


def _time(i: int, name: str, value: Any) -> datetime | None:
    """An RFC 3339 time in UTC; None for an absent value or Go's zero time (year 1)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise AlertPayloadError(BAD_TIME.format(i=i, name=name, value=_shown(value)))
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise AlertPayloadError(BAD_TIME.format(i=i, name=name, value=_shown(value))) from None
    if parsed.tzinfo is None:
        raise AlertPayloadError(BAD_TIME.format(i=i, name=name, value=_shown(value)))
    if parsed.year <= 1:
        return None
    return parsed.astimezone(UTC)


def _shown(value: Any) -> str:
    return repr(value)[:60]
