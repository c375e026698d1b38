"""The capacity review pages: every fleet's plans, one fleet's N+1 review per model (HTML
and JSON), and a model profile from a pasted config.json. `?backend=local|prometheus`
picks where the measured inputs come from, `?model=` one served model; a bad value gets a
400 that says which and why."""

from __future__ import annotations

import json

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from capacity.forms import ModelProfileConfigForm
from capacity.measured import fleet_models
from capacity.models import CapacityPlan, GpuProfile, ModelProfile
from capacity.pages import params
from capacity.pages import review as review_rows
from capacity.plans import PlanReview, plan_review
from inventory.access import Role, fleet_for_user, fleets_for_user, requires
from inventory.models import Fleet

SECTION = "capacity"


def _bad_request(request: HttpRequest, fleet: Fleet, message: str) -> HttpResponse:
    context = {"section": SECTION, "fleet": fleet, "error": message, "backend": "local"}
    return render(request, "capacity/fleet_capacity.html", context, status=400)


def _reviews(request: HttpRequest, fleet: Fleet) -> tuple[str, list[PlanReview]]:
    backend = params.backend_parse(request.GET.get("backend"))
    served = fleet_models(fleet)
    planned = list(CapacityPlan.objects.filter(fleet=fleet).values_list("model_name", flat=True))
    wanted = request.GET.get("model")
    if wanted is not None:
        if wanted not in served and wanted not in planned:
            known = ", ".join(served) or "nothing yet"
            raise params.ParameterError(
                f"model {wanted[:80]!r} is not served by fleet {fleet.slug} (it serves {known})"
            )
        names = [wanted]
    else:
        names = served + [name for name in planned if name not in served]
    return backend, [plan_review(fleet, model_name=name, backend=backend) for name in names]


@requires(Role.VIEWER)
@require_GET
def capacity_index(request: HttpRequest) -> HttpResponse:
    fleets = fleets_for_user(request.user)
    plans = CapacityPlan.objects.filter(fleet__in=fleets).select_related(
        "fleet", "model_profile", "gpu_profile"
    )
    context = {
        "section": SECTION,
        "fleets": fleets,
        "plans": list(plans),
        "model_profiles": review_rows.profile_rows(ModelProfile.objects.all()),
        "gpu_profiles": review_rows.gpu_rows(GpuProfile.objects.all()),
    }
    return render(request, "capacity/review_index.html", context)


@requires(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def model_profile_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = ModelProfileConfigForm(request.POST, request.FILES)
        profile = form.save()
        if profile is not None:
            messages.success(
                request,
                f"Model profile {profile.name} created from its config.json: "
                f"{profile.layers} layers, {profile.kv_heads} KV heads of {profile.head_dim}.",
            )
            return redirect("capacity-review")
    else:
        form = ModelProfileConfigForm()
    return render(request, "capacity/profile_new.html", {"section": SECTION, "form": form})


@requires(Role.VIEWER)
@require_GET
def fleet_capacity(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    try:
        backend, reviews = _reviews(request, fleet)
    except params.ParameterError as exc:
        return _bad_request(request, fleet, str(exc))
    sections = [review_rows.section_of(item) for item in reviews]
    context = {
        "section": SECTION,
        "fleet": fleet,
        "backend": backend,
        "sections": sections,
        "window": reviews[0].measurements.window if reviews else "",
        "model": request.GET.get("model", ""),
    }
    return render(request, "capacity/fleet_capacity.html", context)


@requires(Role.VIEWER)
@require_GET
def fleet_capacity_json(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    try:
        backend, reviews = _reviews(request, fleet)
    except params.ParameterError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    payload = review_rows.fleet_dict(fleet.slug, backend, reviews)
    return HttpResponse(json.dumps(payload, allow_nan=False), content_type="application/json")
