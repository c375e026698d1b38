from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from inventory.selectors import fleet_list as fleet_list_select


def fleet_list(request: HttpRequest) -> HttpResponse:
    fleets = fleet_list_select().annotate(endpoint_count=Count("endpoints"))
    return render(request, "dashboard/fleet_list.html", {"section": "fleet", "fleets": fleets})
