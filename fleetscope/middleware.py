"""HTTP middleware shared by every page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import middleware as auth_middleware
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin

from inventory.access import required_role, role_of
from inventory.models import TokenScope
from inventory.tokens import READ_METHODS, READ_SUFFIXES, bearer_of, token_check

# Scripts only from our own origin: label values from scraped endpoints end up
# in pages, and an injected <script> must not run even if escaping ever slips.
# Plotly injects <style> elements at run time, hence 'unsafe-inline' for styles.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


def open_to_everyone(view_func: Callable[..., Any]) -> bool:
    """A view marked with Django's `login_not_required` (the login page, /readyz, the
    webhook): every middleware here leaves its session and role alone."""
    return not getattr(view_func, "login_required", True)


class LoginRequiredMiddleware(auth_middleware.LoginRequiredMiddleware):
    """Django's, asking the view first: a view open to everyone (/readyz) must not load
    the session, which lives in the database that /readyz may be reporting down."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if open_to_everyone(view_func):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class RoleRequiredMiddleware(MiddlewareMixin):
    """Each view's role (`inventory.access.requires`), checked before the view runs: too
    low a role is a 403 that names the role it needs. Views open to everyone (login,
    /readyz, the token-checked webhook) and the Django admin (which checks its own staff
    and model permissions) are left to themselves; any other view without a mark is for
    admins only."""

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponseBase | None:
        if open_to_everyone(view_func) and (
            # Open views: the login page, /readyz, the webhook; a marked open view (the
            # overview's JSON) answers a signed-out poller itself but holds signed-in
            # users to its role.
            not hasattr(view_func, "fleetscope_role") or not request.user.is_authenticated
        ):
            return None
        if view_func.__module__.startswith(("django.contrib.admin", "django.contrib.auth")):
            return None
        needed = required_role(view_func, request.method or "GET")
        role = role_of(request.user)
        if role >= needed:
            return None
        text = (
            f"Your role ({role.label}) may not use this page: it needs {needed.label}. "
            "Ask an admin (manage.py grant_role)."
        )
        if request.path.endswith((".json", ".csv", ".md")):
            return JsonResponse({"error": text}, status=403)
        return render(request, "403.html", {"reason": text}, status=403)


class ApiTokenMiddleware:
    """`Authorization: Bearer fs_...` instead of a session, for machines: a read token
    opens GET of the exports (JSON, CSV, Markdown) as its user, whose role the role
    middleware then checks as for anyone; anything else with a token is refused here.
    The webhook checks its own (Alertmanager) tokens."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        secret = bearer_of(request.headers.get("Authorization"))
        if secret is None or request.path == reverse("triage-alertmanager-webhook"):
            return self.get_response(request)
        if request.method not in READ_METHODS or not request.path.endswith(READ_SUFFIXES):
            return JsonResponse(
                {"error": "an API token opens only GET of the JSON, CSV and Markdown exports"},
                status=403,
            )
        token = token_check(secret, TokenScope.READ)
        if token is None:
            response = JsonResponse({"error": "unknown, revoked or wrong-scope token"}, status=401)
            response["WWW-Authenticate"] = 'Bearer realm="fleetscope"'
            return response
        request.user = token.user
        return self.get_response(request)
