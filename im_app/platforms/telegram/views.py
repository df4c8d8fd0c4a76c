"""Telegram's webhook: verify the secret token, de-duplicate, answer, then work."""

from __future__ import annotations

import json
import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from im_app.models import Platform
from im_app.platforms.telegram import inbound
from im_app.views import enabled_app

log = logging.getLogger(__name__)


@csrf_exempt
@require_POST
async def webhook(request: HttpRequest, app_id: int, path: str) -> HttpResponse:
    app = await enabled_app(app_id, Platform.TELEGRAM, webhook_path=path)
    if not inbound.secret_ok(app, request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")):
        log.warning("IM app %s: Telegram webhook with a wrong secret token", app.pk)
        return JsonResponse({"error": "wrong secret token"}, status=403)
    try:
        update = json.loads(request.body)
        int(update["update_id"])  # every update has a numeric id
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"error": "not a Telegram update"}, status=400)
    if not await inbound.accept_update(app, update):
        return JsonResponse({"ok": True, "duplicate": True})
    return JsonResponse({"ok": True})


urlpatterns = [path("im/telegram/<int:app_id>/<str:path>", webhook, name="im-telegram-webhook")]
