"""The inputs of a blind-spot audit: alert and recording rules, Grafana panels and
autoscaler queries, read into `Item`s (and `ItemError`s for what cannot be read). No
function here raises on bad input."""

from blindspots.sources._load import selectors_of
from blindspots.sources.autoscalers import autoscalers_from_texts, autoscalers_from_yaml
from blindspots.sources.files import (
    MAX_UPLOAD_BYTES,
    SUFFIXES,
    items_from_paths,
    items_from_text,
    items_from_upload,
)
from blindspots.sources.grafana import panels_from_dashboard
from blindspots.sources.rules import RULES_API, rules_from_api, rules_from_yaml

__all__ = [
    "MAX_UPLOAD_BYTES",
    "SUFFIXES",
    "RULES_API",
    "autoscalers_from_texts",
    "autoscalers_from_yaml",
    "items_from_paths",
    "items_from_text",
    "items_from_upload",
    "panels_from_dashboard",
    "rules_from_api",
    "rules_from_yaml",
    "selectors_of",
]
