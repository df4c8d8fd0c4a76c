"""The receiver of every alert source: POST /api/alerts/<kind>/<url key>/ (docs/alerts.md).
Thin: verification and parsing are the kind's `inbound`, storage is `intake`.

Status codes tell the sender what to do: 404 for an unknown, disabled or mismatched source, 401
when the request is not from the source's sender, 413 / 400 for a delivery that can never succeed
(stored nothing), 503 with Retry-After while the database cannot take it (the sender retries)."""

from __future__ import annotations

import logging

from django.db import DatabaseError, DataError
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from ops_app.alert_sources import intake, registry
from ops_app.alert_sources.events import PayloadError, VerificationFailed
from ops_app.core import jsonbody
from ops_app.estate.change_events import acting_as
from ops_app.estate.grouping import TransientIngestError
from ops_app.models import AlertSource

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 5 * 1024 * 1024  # as Alertmanager's receiver (docs/alerts.md, "Limits")
RETRY_AFTER_SECONDS = "10"


@csrf_exempt
@require_POST
def receive(request: HttpRequest, kind: str, url_key: str) -> JsonResponse:
    """One delivery of an alert source, verified with that source's own secrets."""
    source_kind = registry.kind_of(kind)
    try:
        source = (
            AlertSource.objects.filter(url_key=url_key, kind=kind, enabled=True).first()
            if source_kind
            else None
        )
    except DatabaseError as exc:
        return _retry_later(None, exc)
    if source is None:
        return JsonResponse({"error": "unknown or disabled alert source"}, status=404)
    try:
        raw = jsonbody.read_body(request, MAX_BODY_BYTES)
    except jsonbody.BodyTooLarge as exc:
        return JsonResponse({"error": f"payload too large: {exc}", "limit": MAX_BODY_BYTES}, status=413)
    try:
        source_kind.verify(source, request.headers, raw)
    except VerificationFailed as exc:
        log.info("alert source %s refused an unverified delivery: %s", source.pk, exc)
        return JsonResponse({"error": f"not verified: {exc}"}, status=401)
    try:
        data = jsonbody.decode_json(raw, strip_nul=True)
        events = source_kind.parse(data, source)
    except jsonbody.JSONBodyError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except PayloadError as exc:
        log.info("alert source %s refused a delivery: %s", source.pk, exc)
        if kind == AlertSource.Kind.GENERIC:
            _keep_for_preview(source, data)
        return JsonResponse({"error": str(exc)}, status=400)
    try:
        with acting_as(name=kind):
            result = intake.ingest(source, events, data)
    except DataError as exc:
        log.warning("alert source %s: the database refused a value: %s", source.pk, exc)
        return JsonResponse({"error": f"the database refused a value of this delivery: {exc}"}, status=400)
    except (TransientIngestError, DatabaseError) as exc:
        return _retry_later(source, exc)
    return JsonResponse(
        {
            "status": result.status,
            "incidents": result.incident_ids,
            "events": result.events,
            "duplicates": result.duplicates,
        }
    )


def _keep_for_preview(source: AlertSource, data: object) -> None:
    """A verified generic delivery the mapping cannot read is kept (cut) as the last delivery, so
    the admin's preview shows what to fix; no incident or delivery row is stored."""
    try:
        AlertSource.objects.filter(pk=source.pk).update(
            last_payload=intake.bounded(data), last_delivery_at=timezone.now()
        )
    except DatabaseError as exc:
        log.warning("alert source %s: last delivery not kept: %s", source.pk, exc)


def _retry_later(source: AlertSource | None, exc: Exception) -> JsonResponse:
    log.warning(
        "alert source %s: delivery not stored, asking for a retry: %s", getattr(source, "pk", "?"), exc
    )
    response = JsonResponse({"error": "the delivery could not be stored now; retry later"}, status=503)
    response["Retry-After"] = RETRY_AFTER_SECONDS
    return response
