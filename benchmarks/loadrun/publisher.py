"""The live job in a process of its own, as a Celery worker runs it, and how a push is
told from the next."""

from __future__ import annotations

import json
import sys
import time

from benchmarks.loadrun.child import say


def publisher() -> None:
    """Reads one line per tick on stdin, runs overviews_publish() and answers one JSON line:
    how many views it published, in how long, and the stamp of the default view's pushed
    text (what every client of the fleet should receive next)."""
    import django

    django.setup()
    from dashboard.live import latest_overview_gzip, overviews_publish
    from fleetscope.lib import gzipped
    from inventory.access import ViewScope
    from inventory.models import Fleet

    for line in sys.stdin:
        fleet = Fleet.objects.get(slug=json.loads(line))
        started = time.perf_counter()
        published = overviews_publish()
        seconds = time.perf_counter() - started
        data = latest_overview_gzip(ViewScope(fleet))
        text = "" if data is None else gzipped.decompress(data)
        payload = json.loads(text) if text else {}
        panels = payload.get("panels", [])
        answer = {
            "published": published,
            "seconds": seconds,
            "stamp": push_stamp(text),
            "bytes": len(text.encode()),
            "gzip_bytes": 0 if data is None else len(data),
            "drawn": sum(p["status"] in ("ok", "partial") for p in panels),
            "panels": len(panels),
        }
        say(answer)


STAMP = '"pushed_at":"'


def push_stamp(text: str) -> str | None:
    """Which push `text` is: its `live.pushed_at` (the publish's second; publishes are an
    interval apart), found from the end, where the live job puts it, without parsing
    megabytes of JSON."""
    at = text.rfind(STAMP)
    return None if at < 0 else text[at + len(STAMP) : at + len(STAMP) + 20]
