"""HTTP middleware shared by every page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth import middleware as auth_middleware
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase

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
        if not getattr(view_func, "login_required", True):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
