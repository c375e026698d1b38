"""An entry as one sentence for people:

    SLO prod/chat-latency objective ttft: threshold 2.5 -> 1.5 s, by alice

Fields named `*_seconds` or `*_usd` are shown without the suffix and with the unit after
the value; long text is summarised by its length, as the entry keeps it whole."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from audit.models import AuditAction, AuditEntry
from audit.recording import SECRET_CHANGED
from audit.tracked import LABELS

UNITS = {"_seconds": "s", "_usd": "USD"}
LONGEST_SHOWN = 60  # characters of one value
FIELDS_SHOWN = 6  # fields listed for a created or deleted object


def field_label(name: str) -> tuple[str, str]:
    """("threshold", "s") for "threshold_seconds"; (name with spaces, "") otherwise."""
    for suffix, unit in UNITS.items():
        if name.endswith(suffix) and name != suffix.lstrip("_"):
            return name.removesuffix(suffix).replace("_", " "), unit
    return name.replace("_", " "), ""


def value_text(value: Any) -> str:
    if value is None:
        return "none"
    if value == "":
        return '""'
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _long(*values: Any) -> bool:
    return any(isinstance(v, str) and len(v) > LONGEST_SHOWN for v in values)


def change_text(name: str, pair: Any) -> str:
    label, unit = field_label(name)
    if pair == SECRET_CHANGED:
        return f"{label} changed"
    old, new = pair
    if _long(old, new):
        sizes = " -> ".join(str(len(v)) if isinstance(v, str) else "0" for v in (old, new))
        return f"{label} changed ({sizes} characters)"
    after = f" {unit}" if unit else ""
    return f"{label} {value_text(old)} -> {value_text(new)}{after}"


def values_text(values: Mapping[str, Any]) -> str:
    """The non-empty values of a created or deleted object, the first few of them."""
    shown = []
    for name, value in values.items():
        if value in (None, "", [], {}):
            continue
        label, unit = field_label(name)
        if _long(value):
            shown.append(f"{label} ({len(value)} characters)")
        else:
            shown.append(f"{label} {value_text(value)}{f' {unit}' if unit else ''}")
    more = len(shown) - FIELDS_SHOWN
    return ", ".join(shown[:FIELDS_SHOWN]) + (f" and {more} more" if more > 0 else "")


def entry_text(entry: AuditEntry) -> str:
    label = LABELS.get(entry.object_type, entry.object_type)
    changes = entry.changes if isinstance(entry.changes, dict) else {}
    if entry.action == AuditAction.UPDATE:
        what = "; ".join(change_text(name, pair) for name, pair in changes.items())
    elif entry.action == AuditAction.CREATE:
        values = values_text({name: pair[1] for name, pair in changes.items()})
        what = f"created with {values}" if values else "created"
    else:
        values = values_text({name: pair[0] for name, pair in changes.items()})
        what = f"deleted; it had {values}" if values else "deleted"
    return f"{label} {entry.object_text}: {what}, by {entry.actor}"
