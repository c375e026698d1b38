"""Keeping the garbage collector off the startup heap of long-running processes."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Move everything alive now (Django, numpy, the app's modules: ~150k
    objects) out of the collector's reach.

    Those objects live as long as the process, yet every full collection walks them
    all. A dashboard computation keeps many objects alive until it returns, so full
    collections come every other render or so, and each walked the startup heap:
    measured at 3x the cost of one after freezing (benchmarks/overview.py sets up its
    process this way too). Objects created later are collected as usual; call once,
    when set-up is done and before serving.
    """
    gc.collect()
    gc.freeze()
