"""Slack's three Request URLs (events, interactivity, the `/new` slash command), every one signed:
verify, answer within Slack's three seconds, and leave the work to `inbound`."""

from __future__ import annotations

import json
import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from im_app.models import IMApp, Platform
from im_app.platforms.slack import inbound
from im_app.views import enabled_app

log = logging.getLogger(__name__)


async def _verified(request: HttpRequest, app_id: int) -> IMApp | HttpResponse:
    app = await enabled_app(app_id, Platform.SLACK)
    ok = inbound.signature_ok(
        app,
        request.headers.get("X-Slack-Request-Timestamp", ""),
        request.body,
        request.headers.get("X-Slack-Signature", ""),
    )
    if not ok:
        log.warning("IM app %s: Slack request with a bad signature or a stale timestamp", app.pk)
        return JsonResponse({"error": "invalid signature"}, status=401)
    return app


@csrf_exempt
@require_POST
async def events(request: HttpRequest, app_id: int) -> HttpResponse:
    app = await _verified(request, app_id)
    if isinstance(app, HttpResponse):
        return app
    try:
        body = json.loads(request.body)
    except ValueError:
        return JsonResponse({"error": "not JSON"}, status=400)
    if body.get("type") == "url_verification":
        return JsonResponse({"challenge": body.get("challenge", "")})
    if not await inbound.accept_event(app, body):
        return JsonResponse({"ok": True, "duplicate": True})
    return JsonResponse({"ok": True})


@csrf_exempt
@require_POST
async def interactions(request: HttpRequest, app_id: int) -> HttpResponse:
    app = await _verified(request, app_id)
    if isinstance(app, HttpResponse):
        return app
    try:
        payload = json.loads(request.POST.get("payload", ""))
    except ValueError:
        return JsonResponse({"error": "no payload"}, status=400)
    inbound.accept_interaction(app, payload)
    return HttpResponse(status=200)


@csrf_exempt
@require_POST
async def commands(request: HttpRequest, app_id: int) -> HttpResponse:
    """Slack's slash-command URL (form-encoded, signed like every Slack request): `/new`."""
    app = await _verified(request, app_id)
    if isinstance(app, HttpResponse):
        return app
    form = {key: request.POST.get(key, "") for key in request.POST}
    if form.get("command") == "/new" and not await inbound.accept_command(app, form):
        return HttpResponse(status=200)  # a redelivery
    return JsonResponse({"response_type": "ephemeral", "text": await inbound.acommand_answer(app, form)})


urlpatterns = [
    path("im/slack/<int:app_id>/events", events, name="im-slack-events"),
    path("im/slack/<int:app_id>/interactions", interactions, name="im-slack-interactions"),
    path("im/slack/<int:app_id>/commands", commands, name="im-slack-commands"),
]
