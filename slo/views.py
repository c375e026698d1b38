"""The SLO pages: every SLO the viewer may see, one fleet's SLOs, one SLO in detail, its
status as JSON, and a new SLO for a fleet. `?backend=local|prometheus` picks the source,
`?at=` (ISO 8601, with a zone) the evaluation time; a bad value gets a 400 that says which
and why."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from inventory.access import Role, fleet_for_user, requires
from inventory.models import Fleet
from slo import pages
from slo.forms import SloForm
from slo.presets import PRESETS


def _bad_request(request: HttpRequest, message: str) -> HttpResponse:
    context = {"section": "slos", "message": message}
    return render(request, "slo/bad_request.html", context, status=400)


def _list_page(request: HttpRequest, fleets: list[Fleet], fleet: Fleet | None) -> HttpResponse:
    try:
        params = pages.params_parse(request.GET)
    except pages.ParameterError as exc:
        return _bad_request(request, str(exc))
    statuses = pages.slo_status_list(fleets=fleets, params=params)
    context = {
        "section": "slos",
        "fleet": fleet,
        "fleets": fleets,
        "rows": pages.slo_rows(statuses),
        "params": params,
        "at_text": request.GET.get("at", ""),
        "query": request.GET.urlencode(),
    }
    return render(request, "slo/slo_list.html", context)


@requires(Role.VIEWER)
@require_GET
def slo_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, pages.fleets_visible(request.user), None)


@requires(Role.VIEWER)
@require_GET
def fleet_slo_list(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    return _list_page(request, [fleet], fleet)


@requires(Role.VIEWER)
@require_GET
def slo_detail(request: HttpRequest, fleet_slug: str, slo_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    slo = pages.slo_get(fleet=fleet, slug=slo_slug)
    try:
        params = pages.params_parse(request.GET)
    except pages.ParameterError as exc:
        return _bad_request(request, str(exc))
    status = pages.slo_status_get(slo=slo, params=params)
    worst = pages.worst_objective_label(status)
    objectives, charts = pages.detail_objectives(slo, status, backend=params.backend)
    state = pages.state_shown(status.state)
    context = {
        "section": "slos",
        "fleet": fleet,
        "slo": slo,
        "status": status,
        "state": state,
        "budget": pages.budget_shown(status.budget_remaining),
        # While the budget burns, on-call engineers get a link to open an incident for it.
        "burning": status.state in ("exhausted", "burning", "at-risk"),
        "incident_title": f"SLO {status.name}: {state.label}",
        "objectives": objectives,
        "worst": worst,
        "goodput": pages.goodput_view(status.goodput),
        "charts": charts,
        "evaluated": pages.utc_text(status.at),
        "covers": pages.selector_text(slo),
        "params": params,
        "at_text": request.GET.get("at", ""),
        "latency_span": pages.duration_text(pages.LATENCY_CHART_SPAN.total_seconds()),
    }
    return render(request, "slo/slo_detail.html", context)


@requires(Role.VIEWER)
@require_GET
def slo_detail_json(request: HttpRequest, fleet_slug: str, slo_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    slo = pages.slo_get(fleet=fleet, slug=slo_slug)
    try:
        params = pages.params_parse(request.GET)
    except pages.ParameterError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse(pages.slo_status_get(slo=slo, params=params).to_dict())


@requires(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def slo_new(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    """A new SLO for the fleet: GET shows the form (`?preset=chat` fills it in), POST
    creates the SLO and goes to its page, or shows the form again with what is wrong."""
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    preset = request.GET.get("preset", "")
    if request.method == "POST":
        form = SloForm(request.POST)
        slo = form.save(fleet)
        if slo is not None:
            return redirect("slo-detail", fleet.slug, slo.slug)
    else:
        form = SloForm(preset=preset)
    context = {
        "section": "slos",
        "fleet": fleet,
        "form": form,
        "presets": PRESETS.values(),
        "preset": preset,
    }
    return render(request, "slo/slo_new.html", context)
