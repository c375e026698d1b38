"""What the SLO pages read: an SLO of a fleet, the fleets a viewer may see, their SLOs'
statuses (lowest budget remaining first) and the latency series of an objective."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.http import Http404

from inventory.models import Fleet
from queries import Quantile, QueryResult, Scope, Window, run_query
from slo.evaluation import ObjectiveStatus, SloStatus, slo_status, slo_statuses
from slo.models import Slo
from slo.objectives import OBJECTIVE_KINDS
from slo.pages.params import Backend, PageParams

if TYPE_CHECKING:
    from inventory.access import Viewer

# The latency chart on an SLO's page: the fleet quantile at the target, recent hours.
LATENCY_CHART_SPAN = timedelta(hours=6)
LATENCY_CHART_STEP_SECONDS = 60.0


def slo_get(*, fleet: Fleet, slug: str) -> Slo:
    """The SLO `slug` of `fleet` (which `fleet_for_user` gave the viewer), or 404."""
    slo = Slo.objects.filter(fleet=fleet, slug=slug).select_related("fleet").first()
    if slo is None:
        raise Http404("no such SLO")
    return slo


def fleets_visible(viewer: Viewer) -> list[Fleet]:
    """The fleets `viewer` may see, by name, through the one access rule."""
    from inventory.access import fleets_for_user

    return fleets_for_user(viewer)


def slo_status_list(*, fleets: Sequence[Fleet], params: PageParams) -> list[SloStatus]:
    """Every SLO of `fleets`, lowest budget remaining first (across fleets too)."""
    statuses: list[SloStatus] = []
    for fleet in fleets:
        statuses.extend(slo_statuses(fleet, backend=params.backend, at=params.at))
    return sorted(statuses, key=budget_sort_key)


def slo_status_get(*, slo: Slo, params: PageParams) -> SloStatus:
    return slo_status(slo, backend=params.backend, at=params.at, replica_rates=True)


def budget_sort_key(status: SloStatus) -> tuple[int, float, str, str]:
    """Lowest budget remaining first (by its lower bound); SLOs without a budget last."""
    budget = status.budget_remaining
    if budget is None:
        return (1, 0.0, status.fleet, status.name)
    return (0, budget.lower, status.fleet, status.name)


def latency_quantile(
    slo: Slo, objective: ObjectiveStatus, *, backend: Backend, end: datetime
) -> QueryResult | None:
    """The fleet quantile at the objective's target over the last hours (None for the
    success objective, which has no latency)."""
    if objective.threshold_seconds is None or objective.kind not in OBJECTIVE_KINDS:
        return None
    key = OBJECTIVE_KINDS[objective.kind].key
    scope = Scope(slo.fleet, slo.model_name or None, tuple(slo.instances) or None)
    window = Window(end - LATENCY_CHART_SPAN, end, LATENCY_CHART_STEP_SECONDS)
    return run_query(Quantile(key, q=objective.target), scope=scope, window=window, backend=backend)
