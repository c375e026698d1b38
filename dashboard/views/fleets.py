from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from inventory.access import Role, requires, role_of
from inventory.selectors import fleet_list as fleet_list_select


@requires(Role.TENANT)
@require_GET
def fleet_list(request: HttpRequest) -> HttpResponse:
    if role_of(request.user) == Role.TENANT:
        return redirect("capacity-cost")  # the only pages a tenant viewer has
    fleets = fleet_list_select().annotate(endpoint_count=Count("endpoints"))
    return render(request, "dashboard/fleet_list.html", {"section": "fleet", "fleets": fleets})
