"""The cost pages: every fleet's cost page and stored reports, one fleet's cost over a
period (`?from=&to=` ISO 8601, UTC; `?backend=local|prometheus`), the same report as CSV
and JSON, and a stored monthly report's CSV. A parameter that cannot be used gets a 400
that says which and why."""

from __future__ import annotations

import json
from dataclasses import replace

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from capacity.cost import NO_PRICE, CostInputError, report_csv, tenant_view
from capacity.models import CostReportRecord, FleetPrice
from capacity.pages import cost as cost_pages
from capacity.services import CostReview, cost_review
from inventory.access import Role, fleet_for_user, fleets_for_user, requires, role_of, view_scope
from inventory.models import Fleet

SECTION = "cost"


def _bad_request(request: HttpRequest, fleet: Fleet, message: str) -> HttpResponse:
    # The cost page in its one-message form: no figures from a period that cannot be used.
    context = {"section": SECTION, "fleet": fleet, "message": message}
    return render(request, "capacity/fleet_cost.html", context, status=400)


@requires(Role.TENANT)
@require_GET
def cost_index(request: HttpRequest) -> HttpResponse:
    fleets = fleets_for_user(request.user)
    prices = {p.fleet_id: p for p in FleetPrice.objects.filter(fleet__in=fleets)}
    # A tenant viewer's row: the fleet and its price, not the other tenants' rules or the
    # stored reports that hold every tenant.
    whole = role_of(request.user) >= Role.VIEWER
    rows = []
    for fleet in fleets:
        price = prices.get(fleet.pk)
        rows.append(
            {
                "fleet": fleet,
                "price": price if price and price.price_per_gpu_hour_usd is not None else None,
                "platform": price.platform_cost_usd_per_month if price else None,
                "rules": fleet.tenant_rules.count() if whole else None,
                "reports": list(CostReportRecord.objects.filter(fleet=fleet)[:3]) if whole else [],
            }
        )
    context = {"section": SECTION, "rows": rows, "whole": whole}
    return render(request, "capacity/cost_index.html", context)


def _period(request: HttpRequest, fleet: Fleet) -> cost_pages.Period:
    """The period asked for, cut to what the viewer may see: a tenant viewer always sees
    one of their tenants (another tenant's name is a 404, as a foreign fleet is)."""
    period = cost_pages.period_parse(request.GET)
    tenant = view_scope(request.user, fleet, tenant=period.tenant).tenant
    return period if tenant == period.tenant else replace(period, tenant=tenant)


def _scoped(request: HttpRequest, fleet: Fleet, period: cost_pages.Period) -> CostReview:
    """The period's report, cut to one tenant when `?tenant=` names one."""
    review = cost_review(fleet, start=period.start, end=period.end, backend=period.backend)
    if period.tenant is None:
        return review
    try:
        return replace(review, report=tenant_view(review.report, period.tenant))
    except CostInputError as exc:
        if role_of(request.user) == Role.TENANT:
            # The full message lists the period's tenants: not a tenant viewer's to see.
            raise cost_pages.ParameterError(
                f"no usage of tenant {period.tenant!r} in this period"
            ) from None
        raise cost_pages.ParameterError(exc.message) from None


def _review(request: HttpRequest, fleet: Fleet) -> CostReview:
    return _scoped(request, fleet, _period(request, fleet))


@requires(Role.TENANT)
@require_GET
def fleet_cost(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    try:
        period = _period(request, fleet)
        review = _scoped(request, fleet, period)
    except cost_pages.ParameterError as exc:
        return _bad_request(request, fleet, str(exc))
    report = review.report
    usage = cost_pages.has_usage(review)
    basis = cost_pages.trend_basis(report)
    status = cost_pages.price_status(review)
    priced = status != NO_PRICE
    points = cost_pages.trend(review, tenant=period.tenant)
    figure = cost_pages.trend_figure(points, priced=priced, basis=basis)
    context = {
        "section": SECTION,
        "fleet": fleet,
        "period": period,
        "review": review,
        "report": report,
        "has_usage": usage,
        "priced": priced,
        "price_status": status,
        "no_cost": cost_pages.usd_shown(None, "no price set: usage only"),
        "bill": {
            "gpu_hours": cost_pages.hours_shown(report.gpu_hours),
            "gpu_bill": cost_pages.usd_shown(report.gpu_bill_usd, "no price set"),
            "platform": cost_pages.usd_shown(report.platform_cost_usd, "no platform cost set"),
            "idle": cost_pages.usd_shown(report.idle_cost_usd, "busy fraction not measured"),
            "total": cost_pages.usd_shown(
                report.bill_usd if report.gpu_bill_usd is not None else None, "no price set"
            ),
        },
        "tenant_rows": cost_pages.tenant_rows(report),
        "model_rows": cost_pages.model_rows(report),
        "reconciliations": cost_pages.reconciliation_lines(report),
        # Rule findings name other tenants' rules: not part of one tenant's view.
        "findings": [] if period.tenant else cost_pages.findings(review),
        "notes": cost_pages.report_notes(review),
        "sources": cost_pages.sources(review),
        "trend": {"figure": figure, "basis": basis, "priced": priced},
        "bucket_text": cost_pages.bucket_text(cost_pages.bucket_size(period.start, period.end)),
        "query": period.query,
        # Stored monthly reports hold every tenant: not part of one tenant's view.
        "stored": CostReportRecord.objects.filter(fleet=fleet) if period.tenant is None else [],
        "from_text": request.GET.get("from", ""),
        "to_text": request.GET.get("to", ""),
    }
    return render(request, "capacity/fleet_cost.html", context)


def _download(content: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@requires(Role.TENANT)
@require_GET
def fleet_cost_csv(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    try:
        review = _review(request, fleet)
    except cost_pages.ParameterError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    name = cost_pages.download_name(fleet, review.start, review.end, "csv")
    return _download(report_csv(review.report), "text/csv; charset=utf-8", name)


@requires(Role.TENANT)
@require_GET
def fleet_cost_json(request: HttpRequest, fleet_slug: str) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    try:
        review = _review(request, fleet)
    except cost_pages.ParameterError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    name = cost_pages.download_name(fleet, review.start, review.end, "json")
    content = json.dumps(cost_pages.export_dict(review), indent=2, allow_nan=False)
    return _download(content, "application/json", name)


@requires(Role.VIEWER)
@require_GET
def stored_report_csv(request: HttpRequest, fleet_slug: str, report_id: int) -> HttpResponse:
    fleet = fleet_for_user(request.user, slug=fleet_slug)
    record = CostReportRecord.objects.filter(fleet=fleet, pk=report_id).first()
    if record is None:
        raise Http404("no such stored report")
    name = cost_pages.download_name(fleet, record.period_start, record.period_end, "csv")
    return _download(record.csv, "text/csv; charset=utf-8", name)
