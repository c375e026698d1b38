"""The triage walk: the TTFT-vs-TPOT tree as data (`tree`), its checks, the evidence they
read, and `walk_fleet`, which returns a `Walk` (its `to_dict()` is the JSON contract).

    from triage.walk import walk_fleet
    walk = walk_fleet(fleet, since=timedelta(minutes=30))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from triage.walk.tree import LEAVES, NODES
from triage.walk.types import Breach, Change, Figure, NodeResult, Walk

if TYPE_CHECKING:
    from triage.walk.run import walk_fleet


def __getattr__(name: str) -> Any:
    # The walk reads the database; the types and the tree stay importable without Django.
    if name == "walk_fleet":
        from triage.walk.run import walk_fleet

        return walk_fleet
    raise AttributeError(f"module 'triage.walk' has no attribute {name!r}")


__all__ = ["LEAVES", "NODES", "Breach", "Change", "Figure", "NodeResult", "Walk", "walk_fleet"]
