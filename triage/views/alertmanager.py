"""POST /incidents/alertmanager/: Alertmanager's webhook receiver (payload v4).

Authenticated by `Authorization: Bearer <token>`, not by a session, so it is the one view
exempt from the login and CSRF checks: an API token of scope `alertmanager`
(`manage.py api_token create`), or FLEETSCOPE_ALERTMANAGER_TOKEN. Answers in JSON: 200 with
what each alert did, 400 with the field that is wrong (nothing is written then), 401
without a valid token, 503 while the webhook is off (no token of either kind)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from inventory.models import ApiToken, TokenScope
from inventory.tokens import bearer_of, token_check
from triage.incidents import alert_receive
from triage.webhook import AlertPayloadError, alert_payload_parse, bearer_token_matches

WEBHOOK_OFF = (
    "the Alertmanager webhook is off: create a token (manage.py api_token create NAME --user "
    "USER --scope alertmanager) or set FLEETSCOPE_ALERTMANAGER_TOKEN, and send it as "
    "Authorization: Bearer <token> (Alertmanager: http_config.authorization.credentials)"
)
BAD_TOKEN = "missing or wrong bearer token"


@csrf_exempt  # authenticated by the bearer token; Alertmanager has no session or CSRF token
@login_not_required
@require_POST
def alertmanager_webhook(request: HttpRequest) -> HttpResponse:
    header = request.headers.get("Authorization")
    token = settings.FLEETSCOPE_ALERTMANAGER_TOKEN
    tokens = ApiToken.objects.filter(scope=TokenScope.ALERTMANAGER, revoked_at__isnull=True)
    if not token and not tokens.exists():
        return JsonResponse({"error": WEBHOOK_OFF}, status=503)
    secret = bearer_of(header)
    if secret is not None:
        allowed = token_check(secret, TokenScope.ALERTMANAGER) is not None
    else:
        allowed = bool(token) and bearer_token_matches(header, token)
    if not allowed:
        response = JsonResponse({"error": BAD_TOKEN}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="fleetscope-alertmanager"'
        return response
    try:
        receipt = alert_receive(alert_payload_parse(request.body))
    except AlertPayloadError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except ValidationError as exc:
        return JsonResponse({"error": "; ".join(exc.messages)}, status=400)
    return JsonResponse(receipt.to_dict())
