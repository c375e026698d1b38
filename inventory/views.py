from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from inventory.forms import EndpointForm
from inventory.models import Endpoint, Fleet
from inventory.report import fleet_inventory_report
from inventory.selectors import fleet_list


def overview(request: HttpRequest) -> HttpResponse:
    return render(
        request, "inventory/overview.html", {"section": "inventory", "fleets": fleet_list()}
    )


def fleet_detail(request: HttpRequest, slug: str) -> HttpResponse:
    fleet = get_object_or_404(Fleet, slug=slug)
    form = EndpointForm(request.POST or None, instance=Endpoint(fleet=fleet))
    if request.method == "POST" and form.is_valid():
        form.save()
        return redirect("inventory-fleet-detail", slug=fleet.slug)
    report = fleet_inventory_report(
        fleet=fleet,
        now=timezone.now(),
        interval_seconds=settings.FLEETSCOPE_SCRAPE_INTERVAL_SECONDS,
    )
    return render(
        request,
        "inventory/fleet_detail.html",
        {"section": "inventory", "fleet": fleet, "report": report, "form": form},
    )
