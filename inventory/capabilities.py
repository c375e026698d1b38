"""The capability map: which of the features built so far can run on a fleet, on which
real metric names, or why not.

A feature (a panel today; SLO objectives and triage checks as they are built) declares
its query specs once, in its own app. That app registers a provider here when Django
starts (`capability_provider_register`): given a fleet, it asks the query planner
whether each feature's specs resolve there, per endpoint kind, and why not. The
inventory keeps only the registry and the result types, so it imports no app above it
and lists nothing that is not built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inventory.models import Fleet


class Verdict(StrEnum):
    READY = "ready"
    FALLBACK = "fallback"  # runs, on an older or renamed name: said so
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class KeyStatus:
    """One catalog key a feature reads, resolved on the fleet."""

    key: str
    name: str | None  # the real metric name read, when available
    fallback: bool
    message: str  # why it is unavailable, or which fallback it runs on
    coverage: str = ""  # which endpoints of the fleet expose none of its names, if any

    @property
    def available(self) -> bool:
        return self.name is not None


@dataclass(frozen=True)
class CapabilityStatus:
    area: str  # "panel", "slo", "triage": the app that built the feature
    id: str
    title: str
    needs: tuple[KeyStatus, ...]

    @property
    def verdict(self) -> Verdict:
        if not all(k.available for k in self.needs):
            return Verdict.UNAVAILABLE
        if any(k.fallback for k in self.needs):
            return Verdict.FALLBACK
        return Verdict.READY

    @property
    def reasons(self) -> tuple[str, ...]:
        """What to tell the user: why it can't run, or which fallbacks it runs on."""
        reasons = [k.message for k in self.needs if not k.available or k.fallback]
        return tuple(reasons + [k.coverage for k in self.needs if k.coverage])


CapabilityProvider = Callable[["Fleet"], Sequence[CapabilityStatus]]

_PROVIDERS: dict[str, CapabilityProvider] = {}


def capability_provider_register(area: str, provider: CapabilityProvider) -> None:
    """Called by each app that builds features, from its AppConfig.ready()."""
    _PROVIDERS[area] = provider


def capability_map(*, fleet: Fleet) -> list[CapabilityStatus]:
    """Every registered feature's status on `fleet`, area by area in registration order."""
    return [status for provider in _PROVIDERS.values() for status in provider(fleet)]
