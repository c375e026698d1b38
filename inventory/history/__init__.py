"""Recorded histories: an OpenMetrics file as Prometheus stored it, read and checked
(`history_read`), and loaded into the embedded store through the live write path
(`history_import`, what `manage.py import_history` runs)."""

from inventory.history.importing import HistoryReport, history_import
from inventory.history.reading import HistoryError
from inventory.history.scrapes import (
    UP_DOWN_REASON,
    HistoryContent,
    HistoryCycle,
    HistoryTarget,
    history_read,
)

__all__ = [
    "UP_DOWN_REASON",
    "HistoryContent",
    "HistoryCycle",
    "HistoryError",
    "HistoryReport",
    "HistoryTarget",
    "history_import",
    "history_read",
]
