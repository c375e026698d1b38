"""Last good data per panel, and since when the data source has been failing.

When Prometheus goes away mid-incident, the page must say since when and how
old the last good numbers are, instead of going blank or drawing zeros. Every
overview computation records, per fleet and source, when each panel last had
data and when the source began failing. Both live in the cache, which the web
processes and the scheduler share, for a day. Without the cache (Redis down) the page
still answers: it cannot say since when, so it says since now.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from fleetscope.lib import shared_cache
from inventory.models import Fleet

# Reasons that mean the source itself failed (as opposed to one query or metric).
# A missed page deadline counts: a Prometheus that slow is down for the on-call reading it.
SOURCE_DOWN_REASONS = frozenset(
    {"prometheus-unavailable", "timeout", "deadline", "server-error", "bad-answer"}
)
KEEP_SECONDS = 24 * 3600


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _prefix(fleet: Fleet, backend: str) -> str:
    return f"fleetscope:fresh:{fleet.code.hex}:{backend}"


def source_down(panels: Sequence[dict[str, Any]]) -> str | None:
    """The failure to report when no panel got data and some failed because the source
    did (`None` when the source answered, even if only to say a metric is missing)."""
    if any(p["status"] in ("ok", "partial") for p in panels):
        return None
    for panel in panels:
        if panel["status"] == "error" and SOURCE_DOWN_REASONS & set(panel["reasons"]):
            return panel["notes"][0] if panel["notes"] else panel["reasons"][0]
    return None


def freshness_annotate(
    payload: dict[str, Any], *, fleet: Fleet, backend: str, now: datetime, view: str = ""
) -> None:
    """Add `last_good_at` to each panel and `source_state` to `payload`, remembering both.

    `view` tells filtered views apart (one model, one replica): a panel's last good
    data is per view, while an outage is the source's, whatever the view.
    """
    prefix = _prefix(fleet, backend)
    panels = payload["panels"]
    keys = {p["id"]: f"{prefix}:panel:{view}:{p['id']}" for p in panels}
    known = shared_cache.get_many(list(keys.values()))
    fresh = {}
    for panel in panels:
        if panel["status"] in ("ok", "partial"):
            fresh[keys[panel["id"]]] = _stamp(now)
        panel["last_good_at"] = fresh.get(keys[panel["id"]]) or known.get(keys[panel["id"]])
    if fresh:
        shared_cache.put_many(fresh, timeout=KEEP_SECONDS)
    failure = source_down(panels)
    down_key = f"{prefix}:down-since"
    if failure is None:
        shared_cache.delete(down_key)
        payload["source_state"] = {"status": "ok", "since": None, "message": ""}
        return
    # add() keeps the first failure's time while the outage lasts.
    shared_cache.add(down_key, _stamp(now), timeout=KEEP_SECONDS)
    payload["source_state"] = {
        "status": "down",
        "since": shared_cache.get(down_key) or _stamp(now),
        "message": failure,
    }
