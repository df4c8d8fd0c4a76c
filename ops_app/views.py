"""HTTP endpoints of the estate. Thin: parsing and storage live in ops_app.estate.alertmanager."""

from __future__ import annotations

import logging

from django.db import DatabaseError, DataError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from ops_app.core import jsonbody
from ops_app.estate import alertmanager
from ops_app.estate.change_events import acting_as
from ops_app.models import AlertmanagerReceiver

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 5 * 1024 * 1024  # docs/estate.md; Django's own 2.5 MB limit does not apply here
RETRY_AFTER_SECONDS = "10"


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
    # 4xx only for deliveries that can never succeed (Alertmanager does not retry them); 5xx for
    # anything transient, so Alertmanager delivers again.
    try:
        raw = jsonbody.read_body(request, MAX_BODY_BYTES)
        payload = alertmanager.parse_payload(jsonbody.decode_json(raw, strip_nul=True))
    except jsonbody.BodyTooLarge as exc:
        return JsonResponse({"error": f"payload too large: {exc}", "limit": MAX_BODY_BYTES}, status=413)
    except (jsonbody.JSONBodyError, alertmanager.PayloadError) as exc:
        log.info("alertmanager receiver %s refused a delivery: %s", receiver.pk, exc)
        return JsonResponse({"error": str(exc)}, status=400)
    try:
        with acting_as(name="alertmanager"):
            result = alertmanager.ingest(receiver, payload)
    except DataError as exc:
        log.warning("alertmanager receiver %s: the database refused a value: %s", receiver.pk, exc)
        return JsonResponse({"error": f"the database refused a value of this delivery: {exc}"}, status=400)
    except (alertmanager.TransientIngestError, DatabaseError) as exc:
        log.warning("alertmanager receiver %s: delivery not stored, asking for a retry: %s", receiver.pk, exc)
        response = JsonResponse({"error": "the delivery could not be stored now; retry later"}, status=503)
        response["Retry-After"] = RETRY_AFTER_SECONDS
        return response
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
