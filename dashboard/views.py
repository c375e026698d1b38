from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from fleetscope.sections import PendingSection, render_pending
from inventory.selectors import fleet_list as fleet_list_select


def fleet_list(request: HttpRequest) -> HttpResponse:
    fleets = fleet_list_select().annotate(endpoint_count=Count("endpoints"))
    return render(request, "dashboard/fleet_list.html", {"section": "fleet", "fleets": fleets})


def slo_list(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "slos",
            "SLOs",
            "SLO attainment from histogram buckets, goodput bounds and multi-window "
            "error-budget burn rates for each fleet.",
        ),
    )


def capacity(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "capacity",
            "Capacity",
            "An N+1 capacity review: KV bytes per token, concurrency ceiling, measured "
            "service demand, and whether the fleet meets its SLO with one replica down.",
        ),
    )


def cost(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "cost",
            "Cost",
            "Cost per 1M good output tokens per tenant and model, with idle cost kept apart.",
        ),
    )
