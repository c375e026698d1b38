"""Fleets for the verdict tests, recorded by fleetsim and loaded through `history_import`,
and selectors written by hand as the rule parser would give them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from blindspots.types import Matcher, Selector
from fleetsim.history import History
from inventory.history import history_import
from inventory.models import Fleet

# A fixed end on the 15 s grid, so every run records the same minutes.
END = 1_794_999_990.0
R0, R1 = "127.0.0.1:18000", "127.0.0.1:18001"


def record(path: Path, *, minutes: float = 3, **options: Any) -> History:
    options.setdefault("end", END)
    options.setdefault("scenario", "steady")
    history = History(replicas=2, hours=minutes / 60, seed=5, **options)
    history.write_openmetrics(path)
    return history


def load(slug: str, path: Path) -> Fleet:
    return history_import(fleet_slug=slug, path=path).fleet


def selector(
    metric: str | None, *matchers: Matcher, functions: tuple[str, ...] = (), text: str = ""
) -> Selector:
    return Selector(metric, tuple(matchers), functions, text or (metric or ""))
