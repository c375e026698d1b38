from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from inventory.access import Role, fleet_for_user, requires, role_of
from inventory.forms import DiscoveryForm, EndpointForm
from inventory.models import Endpoint
from inventory.registration import DiscoveryError, endpoints_discover
from inventory.report import fleet_inventory_report
from inventory.selectors import fleet_list


@requires(Role.VIEWER)
@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    return render(
        request, "inventory/overview.html", {"section": "inventory", "fleets": fleet_list()}
    )


@requires(Role.VIEWER, post=Role.ADMIN)
@require_http_methods(["GET", "POST"])
def fleet_detail(request: HttpRequest, slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=slug)
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
        {
            "section": "inventory",
            "fleet": fleet,
            "report": report,
            "form": form,
            "is_admin": role_of(request.user) >= Role.ADMIN,
        },
    )


@requires(Role.ADMIN)
@require_POST
def fleet_discover(request: HttpRequest, slug: str) -> HttpResponse:
    """Admins only: register the active targets of one of the fleet's Prometheus sources,
    say how it went in a message, and go back to the inventory page."""
    fleet = fleet_for_user(request.user, slug=slug)
    form = DiscoveryForm(request.POST, fleet=fleet)
    if not form.is_valid():
        messages.error(request, "Discovery: pick one of this fleet's enabled Prometheus sources.")
        return redirect("inventory-fleet-detail", slug=fleet.slug)
    source = form.cleaned_data["source"]
    try:
        report = endpoints_discover(
            source=source, timeout_seconds=settings.PROMETHEUS_TIMEOUT_SECONDS
        )
    except DiscoveryError as exc:
        messages.error(request, f"Discovery from {source.name} failed: {exc}")
    else:
        messages.success(
            request,
            f"Discovered from {source.name}: {report.created} added, {report.updated} updated.",
        )
    return redirect("inventory-fleet-detail", slug=fleet.slug)
