from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from fleetscope.lib.pending_pages import PendingSection, render_pending


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
