"""HTTP endpoints of the estate. Thin: parsing and storage live in ops_app.alertmanager."""

from __future__ import annotations

import json
import logging

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from ops_app import alertmanager
from ops_app.change_events import acting_as
from ops_app.models import AlertmanagerReceiver

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 5 * 1024 * 1024


@csrf_exempt
@require_POST
def alertmanager_webhook(request: HttpRequest, token: str | None = None) -> JsonResponse:
    """Alertmanager's webhook receiver; the secret token picks the organization. Preferred in an
    `Authorization: Bearer` header (POST /api/alertmanager/), still accepted in the URL path."""
    token = token or _bearer_token(request)
    if not token:
        return JsonResponse({"error": "no receiver token: send Authorization: Bearer <token>"}, status=401)
    receiver = AlertmanagerReceiver.for_token(token)
    if receiver is None:
        return JsonResponse({"error": "unknown or disabled receiver token"}, status=404)
    if len(request.body) > MAX_BODY_BYTES:
        return JsonResponse({"error": "payload too large"}, status=413)
    try:
        payload = alertmanager.parse_payload(json.loads(request.body))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return JsonResponse({"error": f"body is not JSON: {exc}"}, status=400)
    except alertmanager.PayloadError as exc:
        log.info("alertmanager receiver %s refused a delivery: %s", receiver.pk, exc)
        return JsonResponse({"error": str(exc)}, status=400)
    with acting_as(name="alertmanager"):
        result = alertmanager.ingest(receiver, payload)
    return JsonResponse(
        {
            "status": "ok",
            "incidents": result.incident_ids,
            "alerts_created": result.created_alerts,
            "alerts_updated": result.updated_alerts,
        }
    )


def _bearer_token(request: HttpRequest) -> str | None:
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return credentials.strip() or None
