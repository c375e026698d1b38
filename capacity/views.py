from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from fleetscope.lib.pending_pages import PendingSection, render_pending


def capacity_review(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "capacity",
            "Capacity",
            "An N+1 capacity review: KV bytes per token, concurrency ceiling, measured "
            "service demand, and whether the fleet meets its SLO with one replica down.",
        ),
    )


def cost_report(request: HttpRequest) -> HttpResponse:
    return render_pending(
        request,
        PendingSection(
            "cost",
            "Cost",
            "Cost per 1M good output tokens per tenant and model, with idle cost kept apart.",
        ),
    )
