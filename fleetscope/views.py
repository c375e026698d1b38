"""Health endpoints, the favicon and the login pages: the only views reachable without
logging in."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import AuthenticationForm
from django.db.utils import DatabaseError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET, require_safe

from fleetscope import login_limit
from fleetscope.health import readiness_checks


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _is_staff(request: HttpRequest) -> bool:
    try:
        return bool(request.user.is_authenticated and request.user.is_staff)
    except DatabaseError:  # the session lives in the database, which may be what is down
        return False


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    results = readiness_checks()
    ready = all(result.ok for result in results if result.required)
    staff = _is_staff(request)
    body = {
        "status": "ready" if ready else "not ready",
        # Connection details (host, port, user) only for staff: anyone may call /readyz.
        "checks": {result.name: result.as_json(staff=staff) for result in results},
    }
    return JsonResponse(body, status=200 if ready else 503)


FAVICON = "favicon.svg"


@login_not_required
@cache_control(public=True, max_age=86400)
@require_safe
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """`/favicon.ico`, which browsers ask for on pages without a <link rel=icon> (a JSON
    view, say): the static SVG the pages link to, served by whitenoise. A temporary
    redirect, so a browser never pins a static URL that may change."""
    return HttpResponseRedirect(static(FAVICON))


class LoginView(auth_views.LoginView):
    """Django's login page, refusing an attempt over the limit (fleetscope.login_limit)
    with a 429 before the password is checked."""

    def _attempt(self) -> tuple[str, str]:
        """The username typed and the client's address (uvicorn puts the real client there
        from a trusted proxy's X-Forwarded-For: README, "Security")."""
        return self.request.POST.get("username", ""), self.request.META.get("REMOTE_ADDR", "")

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        username, address = self._attempt()
        refusal = login_limit.refusal(username, address)
        if refusal is None:
            return super().post(request, *args, **kwargs)
        # An unbound form: a bound one would authenticate as soon as it is rendered.
        form = AuthenticationForm(self.request, initial={"username": username[:150]})
        context = self.get_context_data(form=form, refused=refusal.message)
        response = self.render_to_response(context, status=429)
        response["Retry-After"] = str(refusal.retry_after)
        return response

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        login_limit.record_failure(*self._attempt())
        return super().form_invalid(form)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        login_limit.clear(self._attempt()[0])
        return super().form_valid(form)


@login_not_required
@never_cache
def admin_login(request: HttpRequest) -> HttpResponseRedirect:
    """The admin's own login page, sent to the rate-limited one: left alone it would be a
    way around the limit. A POST is sent there too, its password unchecked."""
    target = reverse("login")
    if next_url := request.GET.get("next"):
        target += "?" + urlencode({"next": next_url})  # LoginView checks it is ours
    return HttpResponseRedirect(target)
